# flame/ build fragment (owned by the flame module). Every flame/*.c is compiled into
# build/libflamecore.a by the main Makefile; this file only adds the generated JS header.
#
# Names: what a flame/ file exports (functions and data the linker sees) starts with the file's
# prefix, the first word of its name: alloc_ (alloc.c), diff_, escape_, fold_ (fold_*.c; fold.c's
# API is folder_), hash_, match_, methods_, palette_, pb_, pprof_, prof_ or profile_ (profile*.c),
# render_, speedscope_, timeline_, union_. libflamecore.a goes into four programs and every unit
# test: a generic name (parse_frame) could meet another one at link time, and a prefix says where
# to look. Everything else is static, or static inline in a header.

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
