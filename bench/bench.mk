# `make bench`: every bench/bench-*.sh prints figures and ratios against ../shared/ARCHITECTURE.md §4.
bench: all
	@set -e; for s in bench/bench-*.sh; do echo "== $$s"; "$$s"; done
