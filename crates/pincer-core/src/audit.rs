//! Tamper-evident audit trail (AU1–AU5). Being written.
