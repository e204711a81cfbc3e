"""Kueue v0.17's rules, pure: over decoded JSON, no GraphQL, no I/O.

The vocabulary (API group/version, reason codes), the value model (Observed, verdicts, reasons,
numbers, object refs, quota lines), the accessors, exact quantities, per-pod-set requests, quota
and the cohort tree, Kueue and kube-scheduler message parsing, and the scheduling matchers.
diagnosis/ and whatif/ are its clients.
"""
