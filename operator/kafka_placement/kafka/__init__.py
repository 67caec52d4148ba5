"""kafka layer of kafka_placement (see docs/architecture.md, section 2)."""
