"""Webhooks: subscriptions that deliver the change log to a receiver, signed, in order, at least once."""
