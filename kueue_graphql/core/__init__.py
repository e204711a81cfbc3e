"""Pure logic without I/O: identities, error codes, quantities, conditions, requests."""
