"""spark layer of kafka_placement (see DESIGN.md section 2)."""
