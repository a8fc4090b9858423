# fuzz/ fragment: libFuzzer harnesses (make fuzz)
