# mounts/ build fragment (owned by the mounts module). Add targets to 'all' and tests to UNIT_TESTS.
