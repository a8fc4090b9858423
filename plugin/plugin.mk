# plugin/ build fragment (owned by the plugin module). Add targets to 'all' and tests to UNIT_TESTS.
