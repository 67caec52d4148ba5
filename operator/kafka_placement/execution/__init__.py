"""execution layer of kafka_placement (docs/architecture.md): the executor, its record and stores."""
