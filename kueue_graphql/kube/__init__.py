"""Kubernetes access: one shared ApiClient, impersonation, authorization checks, batched reads."""
