# flame/ build fragment (owned by the flame module). Add targets to 'all' and tests to UNIT_TESTS.
