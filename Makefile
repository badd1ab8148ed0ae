# rocefab — one non-recursive Makefile.
#
#   make              build every program into build/
#   make check        install what the tests need, then run every test tier this machine can run
#   make demo         run rocefabd with a small fabric (see README)
#   make bench        print the performance table
#   make bench-detect the deadlock/storm detector against pfcwd, and its cost at scale
#   make bench-cc     the congestion-control tuner against static settings and a grid oracle
#   make fuzz         run every fuzz target FUZZ_TIME seconds (FUZZ_JOBS at once)
#   make fuzz-smoke   the same for 20 s each, two at a time (CI)
#   make SAN=1 ...    the same with ASan+UBSan, in build/san/
#   make install      PREFIX=/usr/local DESTDIR=
#   V=1               show the commands
#
# Every directory's objects go into its own static library (its layer); each program is its
# main.c linked against its layers' libraries, the unit tests and benchmarks against all.

# The release version (the file VERSION) and the commit it was built from (build-aux/version.sh)
VERSION := $(shell build-aux/version.sh)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
# the groups of the service users (packaging/systemd/rocefab.sysusers) that read the configuration
DAEMON_GROUP ?= rocefab
AGENT_GROUP ?= rocefab-agent
SYSCONFDIR ?= /etc
UNITDIR ?= /lib/systemd/system
SYSUSERSDIR ?= /usr/lib/sysusers.d
DESTDIR ?=

CC ?= cc
CLANG ?= clang
PYTEST ?= /usr/bin/python3 -m pytest
SAN ?= 0

ifeq ($(SAN),1)
B ?= build/san
# float-cast-overflow is not part of GCC's "undefined": a double out of an integer's range
SANFLAGS := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow \
	-fno-omit-frame-pointer
OPTFLAGS ?= -O1 -g
else
B ?= build
SANFLAGS :=
OPTFLAGS ?= -O2 -g
endif

PKGS := libmicrohttpd gnutls jansson libnl-3.0 libnl-route-3.0 libnl-genl-3.0 sqlite3 libcurl libsystemd hiredis zlib

# pkg-config runs once, on first use, so that `make check` can install packages first.
PKG_CFLAGS = $(eval PKG_CFLAGS := $$(call pkgconf,--cflags))$(PKG_CFLAGS)
PKG_LIBS = $(eval PKG_LIBS := $$(call pkgconf,--libs))$(PKG_LIBS)
pkgconf = $(if $(shell pkg-config --exists $(PKGS) && echo ok),$(shell pkg-config $(1) $(PKGS)),\
	$(error missing libraries: $(shell pkg-config --print-errors --exists $(PKGS) 2>&1 | head -1); run 'make deps'))

WARN := -Wall -Wextra -Wformat=2 -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
ALL_CFLAGS = -std=gnu11 $(WARN) $(OPTFLAGS) $(SANFLAGS) -D_GNU_SOURCE -I. -I$(B)/gen \
	-DROCEFAB_VERSION='"$(VERSION)"' -DROCEFAB_DATADIR='"$(DATADIR)/rocefab"' \
	$(PKG_CFLAGS) $(CFLAGS) -MMD -MP
ALL_LDFLAGS = $(SANFLAGS) -Wl,--as-needed $(LDFLAGS)
LIBS = $(PKG_LIBS) -lsnappy -libverbs -lm -lpthread

ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-7s %s\n' $(1) $(2);
endif

# --- layers --------------------------------------------------------------------------------
# Each directory is a layer and builds into its own static archive; a directory may use only
# itself and the layers named after it here (docs/architecture.md).  Every object's include
# list (the compiler's .d file, headers included by headers too) is checked against its
# directory's layers right after it is compiled, so an include that runs upward fails the
# build.  Each program links only its layers' archives, highest first: a call into a layer
# the program does not have (rocefabd into agents/) does not link either.  The unit tests,
# fuzzers and benchmarks link every archive.
LAYERS := rocefabd api daemon sim agents agents/probe cli cc lib
USES_lib :=
USES_cc := lib
USES_daemon := cc lib
USES_api := daemon cc lib
USES_rocefabd := api daemon cc lib
USES_agents/probe := lib
USES_agents := agents/probe lib
USES_sim := agents agents/probe cc lib
USES_cli := lib

# Every directory with C sources is a layer (or under tests/): a new one must be added above.
SRC_DIRS := $(patsubst %/,%,$(sort $(dir $(wildcard */*.c */*/*.c */*/*/*.c))))
UNLAYERED := $(filter-out $(LAYERS) tests/%,$(SRC_DIRS))
ifneq ($(UNLAYERED),)
$(error $(UNLAYERED): C sources in a directory that is no layer; add it to LAYERS and a USES_ line (docs/architecture.md))
endif

MAINS := rocefabd/main.c agents/main.c cli/main.c sim/main.c agents/probe/main.c \
	tests/tools/sysfs-replay.c tests/tools/qp-hold.c
layer_srcs = $(filter-out $(MAINS),$(wildcard $(1)/*.c))
layer_lib = $(B)/lib/librocefab-$(subst /,-,$(1)).a
layer_libs = $(foreach l,$(1) $(USES_$(1)),$(call layer_lib,$(l)))
obj = $(patsubst %.c,$(B)/obj/%.o,$(patsubst %.S,$(B)/obj/%.o,$(1)))

EXTRA_OBJS_lib := $(B)/obj/lib/registry-blob.o
EXTRA_OBJS_sim := $(B)/obj/sim/cdf-blob.o
$(foreach l,$(LAYERS),$(eval OBJS_$(l) := $(call obj,$(call layer_srcs,$(l))) $(EXTRA_OBJS_$(l))))
$(foreach l,$(LAYERS),$(eval $(call layer_lib,$(l)): $$(OBJS_$(l))))
ALL_LAYER_LIBS := $(foreach l,$(LAYERS),$(call layer_lib,$(l)))

PROGRAMS := $(B)/rocefabd $(B)/rocefab-agent $(B)/rocefabctl $(B)/rocefab-sim $(B)/rocefab-probe
TOOLS := $(B)/tools/sysfs-replay $(B)/tools/qp-hold

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_TESTS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/unit/%)
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BINS := $(BENCH_SRCS:tests/bench/%.c=$(B)/bench/%)

ALL_OBJS := $(foreach l,$(LAYERS),$(OBJS_$(l))) $(call obj,$(MAINS) $(UNIT_SRCS) $(BENCH_SRCS))

# Goals that install what they need before the first compile.
ifneq ($(filter check check-% demo bench bench-% fuzz fuzz-%,$(MAKECMDGOALS)),)
NEED_DEPS := deps
endif

.PHONY: FORCE all deps check check-unit check-layers check-system check-schemas check-units check-prometheus check-openapi check-web check-rxe demo \
	bench bench-detect bench-cc fuzz fuzz-build fuzz-smoke deb check-deb \
	install clean tools
.DEFAULT_GOAL := all
.SECONDARY:

all: $(PROGRAMS) $(TOOLS)
tools: $(TOOLS)

deps:
	$(Q)packaging/install-deps.sh $(DEPS_TIERS)

# --- compile and link --------------------------------------------------------------------
# The layer of a source: its directory when that is a layer (tests/ are none).
layer_of = $(filter $(patsubst %/,%,$(dir $(1))),$(LAYERS))

$(B)/obj/%.o: %.c | $(NEED_DEPS)
	$(call say,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<
	$(Q)$(if $(call layer_of,$<),awk -v src=$< -v layer=$(call layer_of,$<) \
		-v uses="$(USES_$(call layer_of,$<))" -f build-aux/layers.awk $(@:.o=.d) || \
		{ rm -f $@; exit 1; })

$(B)/obj/%.o: %.S | $(NEED_DEPS)
	$(call say,AS,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -c -o $@ $<

$(B)/obj/lib/registry-blob.o: schemas/counters.json
# rocefabd's compiled-in paths (api.web_root's default) follow DATADIR, so `make` then
# `make install PREFIX=/usr` rebuilds what uses them instead of installing a daemon that looks
# under /usr/local: the stamp changes only when DATADIR does.
$(B)/gen/datadir.stamp: FORCE
	$(Q)mkdir -p $(@D)
	$(Q)echo '$(DATADIR)' | cmp -s - $@ || echo '$(DATADIR)' > $@
$(B)/obj/rocefabd/rocefabd.o: $(B)/gen/datadir.stamp
# Likewise the version (a commit, a change to the tree): the files that say it are built again
# when it changes, or one binary would say three versions (--version, /health, its log).
VERSION_SRCS := $(shell grep -l ROCEFAB_VERSION $(foreach l,$(LAYERS),$(wildcard $(l)/*.c)) $(UNIT_SRCS))
$(B)/gen/version.stamp: FORCE
	$(Q)mkdir -p $(@D)
	$(Q)echo '$(VERSION)' | cmp -s - $@ || echo '$(VERSION)' > $@
$(call obj,$(VERSION_SRCS)): $(B)/gen/version.stamp
FORCE:
$(B)/obj/sim/cdf-blob.o: $(wildcard sim/workloads/*.txt)

$(ALL_LAYER_LIBS):
	$(call say,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

# A program: its main, then its layers' archives, highest first.
$(B)/rocefabd: $(call obj,rocefabd/main.c) $(call layer_libs,rocefabd)
$(B)/rocefab-agent: $(call obj,agents/main.c) $(call layer_libs,agents)
$(B)/rocefab-sim: $(call obj,sim/main.c) $(call layer_libs,sim)
$(B)/rocefab-probe: $(call obj,agents/probe/main.c) $(call layer_libs,agents/probe)
$(B)/rocefabctl: $(call obj,cli/main.c) $(call layer_libs,cli)
$(PROGRAMS):
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(B)/tools/sysfs-replay: $(call obj,tests/tools/sysfs-replay.c) $(ALL_LAYER_LIBS)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# holds RC and UD QPs for the QP tests in the soft-RoCE guest (tests/rxe)
$(B)/tools/qp-hold: $(call obj,tests/tools/qp-hold.c)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ -libverbs

$(B)/tests/unit/%: $(B)/obj/tests/unit/%.o $(ALL_LAYER_LIBS)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS) -lcmocka

$(B)/bench/%: $(B)/obj/tests/bench/%.o $(ALL_LAYER_LIBS)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# --- tests -------------------------------------------------------------------------------
check: DEPS_TIERS = check rxe deb
check: deps all $(BENCH_BINS) check-unit check-layers check-schemas check-units check-prometheus check-openapi check-system check-web check-rxe \
	check-deb

check-unit: $(UNIT_TESTS)
	$(Q)tests/run-unit.sh $(UNIT_TESTS)

# the include check itself, on made-up dependency files (every real object passed it when built)
check-layers:
	$(Q)USES_daemon="$(USES_daemon)" USES_agents="$(USES_agents)" tests/check-layers.sh

check-schemas: all
	$(Q)ROCEFAB_BUILD=$(B) $(PYTEST) -q -p no:cacheprovider tests/system/test_schemas.py

check-units:
	$(Q)tests/check-systemd-units.sh

# the alerting rules: valid, and each alert firing on its series only after its `for`
check-prometheus:
	$(Q)promtool check rules packaging/prometheus/rocefab.rules.yml
	$(Q)cd tests/prometheus && promtool test rules rocefab.rules.test.yml

# The OpenAPI document linted by Redocly CLI (its recommended rules, every operation described:
# schemas/redocly.yaml); any error or warning fails. The linter is pinned with its whole tree in
# build-aux/openapi-lint/package-lock.json and installed by npm ci into the build directory (the
# first time ~30 s and ~200 MB; again only when the lock changes). No telemetry, no update check.
OPENAPI_LINT = $(B)/openapi-lint/node_modules/@redocly/cli/bin/cli.js
$(OPENAPI_LINT): build-aux/openapi-lint/package.json build-aux/openapi-lint/package-lock.json | $(NEED_DEPS)
	$(call say,NPM,$(B)/openapi-lint)
	$(Q)mkdir -p $(B)/openapi-lint
	$(Q)cp build-aux/openapi-lint/package.json build-aux/openapi-lint/package-lock.json $(B)/openapi-lint/
	$(Q)cd $(B)/openapi-lint && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	$(Q)touch $@

check-openapi: $(OPENAPI_LINT)
	$(Q)REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true node $(OPENAPI_LINT) lint \
		--config schemas/redocly.yaml --format=stylish schemas/openapi.yaml \
		>$(B)/openapi-lint/lint.log 2>&1; r=$$?; cat $(B)/openapi-lint/lint.log; \
	if [ $$r -ne 0 ] || grep -qiE '\bwarning' $(B)/openapi-lint/lint.log; then \
		echo "check-openapi: schemas/openapi.yaml has lint errors or warnings (above)" >&2; exit 1; fi

check-system: all $(BENCH_BINS)
	$(Q)ROCEFAB_BUILD=$(B) $(PYTEST) -v -p no:cacheprovider --durations=8 tests/system

# the dashboard in Debian's headless Chromium (Selenium) against rocefabd and a simulated fabric
check-web: all
	$(Q)ROCEFAB_BUILD=$(B) $(PYTEST) -v -p no:cacheprovider --durations=4 tests/web

# real verbs: soft-RoCE in QEMU guests (tests/rxe/README.md); fetches the kernel once into build/rxe
check-rxe: all
	$(Q)ROCEFAB_BUILD=$(B) $(PYTEST) -v -p no:cacheprovider --durations=4 tests/rxe

demo: deps all
	$(Q)ROCEFAB_BUILD=$(B) tests/demo.sh

bench: DEPS_TIERS = bench rxe
bench: all $(BENCH_BINS)
	$(Q)ROCEFAB_BUILD=$(B) tests/bench/run.sh

# the PFC deadlock/storm detector against the SONiC-style pfcwd on the same simulated runs, and
# its cost at 2,000 switches and 50,000 hosts (tests/bench/bench_detect*.{py,c}); CI runs a
# smoke of both (tests/system/test_detect.py)
bench-detect: all $(B)/bench/bench_detect_scale
	$(Q)ROCEFAB_BUILD=$(B) /usr/bin/python3 tests/bench/bench_detect.py
	$(Q)$(B)/bench/bench_detect_scale

# the congestion-control tuner beside the DCQCN paper's and the HPCC simulator's settings and the
# best static setting of a grid (27 ECN points x 2 DCQCN settings), per workload on the 64-host
# fabric, 3 seeds (tests/bench/bench_cc.py); CI runs its smoke (tests/system/test_cc.py)
bench-cc: all
	$(Q)ROCEFAB_BUILD=$(B) /usr/bin/python3 tests/bench/bench_cc.py

# --- fuzzing (clang libFuzzer) ----------------------------------------------------------------
# Every tests/fuzz/fuzz_NAME.c is a target (docs/testing.md, "Fuzzing").  The layers are compiled again by
# clang with coverage (fuzzer-no-link), ASan and UBSan into archives of their own under
# $(B)/fuzz/lib, so that the parsers a target reaches are instrumented; a target links them all,
# highest layer first, as the unit tests do (their warnings are the main build's business: -w).
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION (libFuzzer's convention) lowers the few size limits
# whose refusal would take the fuzzer's whole memory to reach (sim/workload.c SIM_MAX_FLOWS).
# `make fuzz` runs every target FUZZ_TIME seconds (FUZZ_JOBS at once) on
# $(B)/fuzz/corpus-NAME, seeded from tests/fuzz/corpus/NAME and the seed files and
# directories of tests/fuzz/NAME.options; any finding (crash, leak, UBSan, timeout, out of
# memory) fails it and leaves its input in $(B)/fuzz/NAME-crash-* (or -leak-, -timeout-, -oom-).
# `make fuzz-smoke` is the CI's: 20 s each, two at a time.
FUZZ_TIME ?= 60
FUZZ_JOBS ?= 1
FUZZ_TARGETS ?= $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_CFLAGS = -std=gnu11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer -D_GNU_SOURCE -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -I. \
	-I$(B)/gen -DROCEFAB_VERSION='"$(VERSION)"' \
	-DROCEFAB_DATADIR='"$(DATADIR)/rocefab"' $(PKG_CFLAGS) -MMD -MP
fuzz_lib = $(B)/fuzz/lib/librocefab-$(subst /,-,$(1)).a
$(foreach l,$(LAYERS),$(eval FUZZ_OBJS_$(l) := \
	$(patsubst $(B)/obj/%,$(B)/fuzz/obj/%,$(call obj,$(call layer_srcs,$(l)))) $(EXTRA_OBJS_$(l))))
$(foreach l,$(LAYERS),$(eval $(call fuzz_lib,$(l)): $$(FUZZ_OBJS_$(l))))
FUZZ_LAYER_LIBS := $(foreach l,$(LAYERS),$(call fuzz_lib,$(l)))
FUZZ_BINS := $(FUZZ_TARGETS:%=$(B)/fuzz/fuzz_%)

$(B)/fuzz/obj/%.o: %.c | $(NEED_DEPS)
	$(call say,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -w -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_LAYER_LIBS):
	$(call say,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LAYER_LIBS) | $(NEED_DEPS)
	$(call say,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -fsanitize=fuzzer -o $@ $< \
		$(FUZZ_LAYER_LIBS) $(LIBS)

fuzz-build: $(FUZZ_BINS)

fuzz: $(FUZZ_BINS)
	$(Q)FUZZ_TIME=$(FUZZ_TIME) FUZZ_JOBS=$(FUZZ_JOBS) tests/fuzz/run.sh $(B)/fuzz $(FUZZ_TARGETS)

fuzz-smoke: FUZZ_TIME = 20
fuzz-smoke: FUZZ_JOBS = 2
fuzz-smoke: fuzz

# --- install -----------------------------------------------------------------------------
install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/rocefab \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(SYSCONFDIR)/rocefab
	install -m 0755 $(B)/rocefabd $(B)/rocefab-agent $(DESTDIR)$(SBINDIR)/
	install -m 0755 $(B)/rocefabctl $(B)/rocefab-sim $(B)/rocefab-probe $(DESTDIR)$(BINDIR)/
	install -m 0644 schemas/counters.json schemas/agent-report.schema.json schemas/pfc-report.schema.json \
		schemas/command.schema.json schemas/scenario.schema.json schemas/openapi.yaml \
		schemas/sim-control.yaml \
		$(DESTDIR)$(DATADIR)/rocefab/
	install -d $(DESTDIR)$(DATADIR)/rocefab/scenarios
	install -m 0644 sim/scenarios/*.json $(DESTDIR)$(DATADIR)/rocefab/scenarios/
	install -d $(DESTDIR)$(DATADIR)/rocefab/scenarios/detect
	install -m 0644 sim/scenarios/detect/*.json $(DESTDIR)$(DATADIR)/rocefab/scenarios/detect/
	install -d $(DESTDIR)$(DATADIR)/rocefab/web/lib $(DESTDIR)$(DATADIR)/rocefab/web/views
	install -m 0644 web/index.html web/app.js web/style.css web/javascript.list \
		$(DESTDIR)$(DATADIR)/rocefab/web/
	install -m 0644 web/lib/*.js $(DESTDIR)$(DATADIR)/rocefab/web/lib/
	install -m 0644 web/views/*.js $(DESTDIR)$(DATADIR)/rocefab/web/views/
	install -m 0644 packaging/man/rocefabd.8 packaging/man/rocefab-agent.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 packaging/man/rocefabctl.1 packaging/man/rocefab-sim.1 packaging/man/rocefab-probe.1 \
		$(DESTDIR)$(MANDIR)/man1/
	install -m 0644 packaging/systemd/rocefabd.service packaging/systemd/rocefab-agent.service \
		$(DESTDIR)$(UNITDIR)/
	install -m 0644 packaging/systemd/rocefab.sysusers $(DESTDIR)$(SYSUSERSDIR)/rocefab.conf
	install -d $(DESTDIR)$(DATADIR)/rocefab/systemd
	install -m 0644 packaging/systemd/rocefab-agent.service.d/dcqcn.conf \
		$(DESTDIR)$(DATADIR)/rocefab/systemd/rocefab-agent-dcqcn.conf
	install -d $(DESTDIR)$(DATADIR)/rocefab/prometheus $(DESTDIR)$(DATADIR)/rocefab/grafana
	install -m 0644 packaging/prometheus/rocefab.rules.yml $(DESTDIR)$(DATADIR)/rocefab/prometheus/
	install -m 0644 packaging/grafana/rocefab-fabric.json $(DESTDIR)$(DATADIR)/rocefab/grafana/
	install -d $(DESTDIR)$(DATADIR)/bash-completion/completions $(DESTDIR)$(DATADIR)/zsh/vendor-completions
	install -m 0644 packaging/completion/rocefabctl.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/rocefabctl
	install -m 0644 packaging/completion/_rocefabctl $(DESTDIR)$(DATADIR)/zsh/vendor-completions/_rocefabctl
	@# the services read their configuration as their users: group-owned by them, others kept
	@# out (the groups come from systemd-sysusers; without them, say how to finish).  An
	@# operator's configuration is kept as it is (said when its group would keep the service
	@# out): the example goes beside it as NAME.conf.new.  Its paths are this install's
	@# (DATADIR: /usr/share in the packages, where /usr/local/share would turn the dashboard off)
	@for f in rocefabd:$(DAEMON_GROUP) rocefab-agent:$(AGENT_GROUP); do \
		conf=$(DESTDIR)$(SYSCONFDIR)/rocefab/$${f%%:*}.conf; grp=$${f#*:}; new=$$conf; \
		if [ -e "$$conf" ] || [ -L "$$conf" ]; then \
			echo "install: kept $$conf; the example of this release is $$conf.new" >&2; new=$$conf.new; \
		fi; \
		mkdir -p $(B)/gen && sed 's|/usr/local/share/|$(DATADIR)/|g' packaging/$${f%%:*}.conf \
			> $(B)/gen/$${f%%:*}.conf && install -m 0640 $(B)/gen/$${f%%:*}.conf "$$new" || exit 1; \
		if ! getent group "$$grp" > /dev/null; then \
			echo "install: no group $$grp yet: run systemd-sysusers, then chgrp $$grp $$conf" >&2; \
		else \
			chgrp "$$grp" "$$new" || exit 1; \
			if [ "$$new" != "$$conf" ] && [ "$$(stat -L -c %G "$$conf" 2> /dev/null)" != "$$grp" ]; then \
				echo "install: $$conf is not group $$grp's: its service cannot read it" \
					"(chgrp $$grp $$conf; chmod 0640 $$conf)" >&2; \
			fi; \
		fi; \
	done

# the packages built, lintian clean, installed into a fresh tree and run (tests/deb)
check-deb: deb
	$(Q)$(PYTEST) -v -p no:cacheprovider tests/deb

# --- Debian packages ------------------------------------------------------------------------
# rocefabd, rocefab-agent and rocefab-tools from debian/ (dpkg-buildpackage writes them next to
# the source tree; they are moved to build/deb), then lintian, which must print nothing.
deb: DEPS_TIERS = deb
deb: deps
	$(Q)dpkg-buildpackage -us -uc -b -j$$(nproc)
	$(Q)mkdir -p build/deb && rm -f build/deb/*
	$(Q)v=$$(dpkg-parsechangelog -S Version); \
		mv ../rocefabd_$${v}_*.deb ../rocefab-agent_$${v}_*.deb ../rocefab-tools_$${v}_*.deb \
		   ../rocefabd-dbgsym_$${v}_*.deb ../rocefab-agent-dbgsym_$${v}_*.deb ../rocefab-tools-dbgsym_$${v}_*.deb \
		   ../rocefab_$${v}_*.buildinfo ../rocefab_$${v}_*.changes build/deb/ 2>/dev/null; \
		ls build/deb/rocefabd_$${v}_*.deb > /dev/null
	@# (as nobody when root: lintian says it would rather not run as root, and then says nothing;
	@# in a TMPDIR of its own, removed after it: lintian leaves its mldbm-elf-* files there)
	$(Q)t=$$(mktemp -d /tmp/rocefab-lintian.XXXXXX) || exit 1; \
		if [ "$$(id -u)" = 0 ]; then chown nobody:nogroup "$$t"; \
			as="setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=$$t"; fi; \
		TMPDIR="$$t" $$as lintian --fail-on error,warning build/deb/*.changes; rc=$$?; rm -rf "$$t"; exit $$rc
	$(Q)debian/rules clean > /dev/null

clean:
	rm -rf build

-include $(ALL_OBJS:.o=.d) $(wildcard $(B)/fuzz/obj/*/*.d $(B)/fuzz/obj/*/*/*.d $(B)/fuzz/*.d)
