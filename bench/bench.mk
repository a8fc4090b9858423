# `make bench`: every bench/bench-*.sh prints figures and ratios against docs/BENCHMARKS.md (reference figures).
bench: all
	@set -e; for s in bench/bench-*.sh; do echo "== $$s"; "$$s"; done
