//! Shell command risk classifier (PO2). Being written.
