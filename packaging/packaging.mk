# packaging/ build fragment: `make deb` builds build/docker-flame_<version>_<arch>.deb offline
# (packaging/deb.sh; docs/PACKAGING.md). install.sh remains the way to install from a clone.
.PHONY: deb
deb: $(BUILD)/docker-flame $(BUILD)/flame-sidecar.tar.sha256
	@packaging/deb.sh $(BUILD) $(VERSION)
