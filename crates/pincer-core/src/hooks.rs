//! Hooks on tool calls (HK1). Being written.
