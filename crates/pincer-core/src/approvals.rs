//! File-backed approval queue (PO4). Being written.
