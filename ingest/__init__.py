"""TrainGuard ingest package."""
