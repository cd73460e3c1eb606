"""Remediation webhooks: signed, retried, dead-lettered and re-deliverable deliveries."""
