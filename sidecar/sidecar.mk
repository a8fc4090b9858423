# sidecar/ build fragment (owned by the sidecar module). Add targets to 'all' and tests to UNIT_TESTS.
