"""The privacy budget: events, the in-memory accountant and the persistent ledger (one Accountant protocol)."""
