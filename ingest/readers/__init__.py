"""Readers that turn what training jobs already write (logs, dumps, scheduler state) into events."""
