"""Executors: one registry entry per action kind (Slurm, Kubernetes, scheduler, webhook)."""
