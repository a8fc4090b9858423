# flame/ build fragment (owned by the flame module). Every flame/*.c is compiled into
# build/libflamecore.a by the main Makefile; this file only adds the generated JS header.

# The SVG's JavaScript lives in flame/render.js and is embedded as a C string. The header is
# committed (so a fresh clone builds without this rule) and regenerated when the .js changes.
flame/render_js.h: flame/render.js
	@if grep -q ']]>' $<; then echo "$<: must not contain ]]> (it goes into CDATA)"; exit 1; fi
	{ echo '/* Generated from flame/render.js by flame/flame.mk: do not edit. */'; \
	  echo '// clang-format off'; \
	  echo 'static const char render_js[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $<; \
	  echo '    ;'; } > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/flame/render.o $(BUILD)/asan/flame/render.o: flame/render_js.h
