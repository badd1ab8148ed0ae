# rocefab — one non-recursive Makefile.
#
#   make              build every program into build/
#   make check        install what the tests need, then run every test tier this machine can run
#   make demo         run rocefabd with a small fabric (see README)
#   make bench        print the performance table
#   make fuzz         run the fuzz targets for a bounded time
#   make SAN=1 ...    the same with ASan+UBSan, in build/san/
#   make install      PREFIX=/usr/local DESTDIR=
#   V=1               show the commands
#
# Every directory's objects go into one internal static library; each program is its main.c
# linked against it, and so are the unit tests, fuzzers and benchmarks.

VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.1.0)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
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
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
OPTFLAGS ?= -O1 -g
else
B ?= build
SANFLAGS :=
OPTFLAGS ?= -O2 -g
endif

PKGS := libmicrohttpd jansson libnl-3.0 libnl-route-3.0 libnl-genl-3.0 sqlite3 libcurl libsystemd

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
LIBS = $(PKG_LIBS) -libverbs -lm -lpthread

ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-7s %s\n' $(1) $(2);
endif

# --- sources -----------------------------------------------------------------------------
LIB_SRCS := $(wildcard lib/*.c)
DAEMON_SRCS := $(filter-out daemon/main.c,$(wildcard daemon/*.c))
API_SRCS := $(wildcard api/*.c)
AGENT_SRCS := $(filter-out agents/main.c,$(wildcard agents/*.c)) \
	$(filter-out agents/probe/main.c,$(wildcard agents/probe/*.c))
CLI_SRCS := $(filter-out cli/main.c,$(wildcard cli/*.c))
SIM_SRCS := $(filter-out sim/main.c,$(wildcard sim/*.c))
CC_SRCS := $(wildcard cc/*.c)
CORE_SRCS := $(LIB_SRCS) $(DAEMON_SRCS) $(API_SRCS) $(AGENT_SRCS) $(CLI_SRCS) $(SIM_SRCS) $(CC_SRCS)
CORE_OBJS := $(CORE_SRCS:%.c=$(B)/%.o) $(B)/lib/registry-blob.o $(B)/sim/cdf-blob.o
CORE_LIB := $(B)/librocefab.a

PROGRAMS := $(B)/rocefabd $(B)/rocefab-agent $(B)/rocefabctl $(B)/rocefab-sim $(B)/rocefab-probe
TOOLS := $(B)/tools/sysfs-replay
MAINS := daemon/main.c agents/main.c cli/main.c sim/main.c agents/probe/main.c \
	tests/tools/sysfs-replay.c

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_TESTS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/unit/%)
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BINS := $(BENCH_SRCS:tests/bench/%.c=$(B)/bench/%)

ALL_OBJS := $(CORE_OBJS) $(MAINS:%.c=$(B)/%.o) $(UNIT_SRCS:%.c=$(B)/%.o) $(BENCH_SRCS:%.c=$(B)/%.o)

# Goals that install what they need before the first compile.
ifneq ($(filter check check-% demo bench fuzz,$(MAKECMDGOALS)),)
NEED_DEPS := deps
endif

.PHONY: all deps check check-unit check-system check-schemas check-units check-rxe demo bench fuzz \
	install clean tools
.DEFAULT_GOAL := all
.SECONDARY:

all: $(PROGRAMS) $(TOOLS)
tools: $(TOOLS)

deps:
	$(Q)packaging/install-deps.sh $(DEPS_TIERS)

# --- compile and link --------------------------------------------------------------------
$(B)/%.o: %.c | $(NEED_DEPS)
	$(call say,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/lib/registry-blob.o: lib/registry-blob.S schemas/counters.json | $(NEED_DEPS)
	$(call say,AS,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -c -o $@ $<

$(CORE_LIB): $(CORE_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(B)/rocefabd: $(B)/daemon/main.o $(CORE_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(B)/rocefab-agent: $(B)/agents/main.o $(CORE_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(B)/sim/cdf-blob.o: sim/cdf-blob.S $(wildcard sim/workloads/*.txt) | $(NEED_DEPS)
	$(call say,AS,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -c -o $@ $<

$(B)/rocefab-sim: $(B)/sim/main.o $(CORE_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(B)/rocefab-probe: $(B)/agents/probe/main.o $(CORE_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(B)/rocefabctl: $(B)/cli/main.o $(CORE_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(B)/tools/sysfs-replay: $(B)/tests/tools/sysfs-replay.o $(CORE_LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(B)/tests/unit/%: $(B)/tests/unit/%.o $(CORE_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(CORE_LIB) $(LIBS) -lcmocka

$(B)/bench/%: $(B)/tests/bench/%.o $(CORE_LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(CORE_LIB) $(LIBS)

# --- tests -------------------------------------------------------------------------------
check: DEPS_TIERS = check rxe
check: deps all $(BENCH_BINS) check-unit check-schemas check-units check-system check-rxe

check-unit: $(UNIT_TESTS)
	$(Q)tests/run-unit.sh $(UNIT_TESTS)

check-schemas: all
	$(Q)ROCEFAB_BUILD=$(B) $(PYTEST) -q -p no:cacheprovider tests/system/test_schemas.py

check-units:
	$(Q)tests/check-systemd-units.sh

check-system: all
	$(Q)ROCEFAB_BUILD=$(B) $(PYTEST) -v -p no:cacheprovider --durations=8 tests/system

# real verbs: soft-RoCE in QEMU guests (tests/rxe/README.md); fetches the kernel once into build/rxe
check-rxe: all
	$(Q)ROCEFAB_BUILD=$(B) $(PYTEST) -v -p no:cacheprovider --durations=4 tests/rxe

demo: deps all
	$(Q)ROCEFAB_BUILD=$(B) tests/demo.sh

bench: DEPS_TIERS = bench rxe
bench: all $(BENCH_BINS)
	$(Q)ROCEFAB_BUILD=$(B) tests/bench/run.sh

# --- fuzzing (clang libFuzzer; the parsers are compiled into the fuzzer with coverage) --------
FUZZ_TIME ?= 60
FUZZ_FLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-D_GNU_SOURCE -I. -DROCEFAB_VERSION='"$(VERSION)"'
FUZZ_SRCS := $(LIB_SRCS) daemon/report.c
$(B)/fuzz/fuzz_report: tests/fuzz/fuzz_report.c $(FUZZ_SRCS) $(B)/lib/registry-blob.o | $(NEED_DEPS)
	$(call say,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) -lm -lpthread

fuzz: $(B)/fuzz/fuzz_report
	$(Q)mkdir -p $(B)/fuzz/corpus-report
	$(Q)cp tests/data/reports/good/*.json tests/data/reports/bad/*.json $(B)/fuzz/corpus-report/
	$(B)/fuzz/fuzz_report -max_total_time=$(FUZZ_TIME) -max_len=65536 -timeout=10 \
		-artifact_prefix=$(B)/fuzz/ $(B)/fuzz/corpus-report

# --- install -----------------------------------------------------------------------------
install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/rocefab \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(SYSCONFDIR)/rocefab
	install -m 0755 $(B)/rocefabd $(B)/rocefab-agent $(DESTDIR)$(SBINDIR)/
	install -m 0755 $(B)/rocefabctl $(B)/rocefab-sim $(B)/rocefab-probe $(DESTDIR)$(BINDIR)/
	install -m 0644 schemas/counters.json schemas/agent-report.schema.json \
		schemas/command.schema.json schemas/scenario.schema.json schemas/openapi.yaml \
		schemas/sim-control.yaml \
		$(DESTDIR)$(DATADIR)/rocefab/
	install -d $(DESTDIR)$(DATADIR)/rocefab/scenarios
	install -m 0644 sim/scenarios/*.json $(DESTDIR)$(DATADIR)/rocefab/scenarios/
	install -m 0644 packaging/man/rocefabd.8 packaging/man/rocefab-agent.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 packaging/man/rocefabctl.1 packaging/man/rocefab-sim.1 packaging/man/rocefab-probe.1 \
		$(DESTDIR)$(MANDIR)/man1/
	install -m 0644 packaging/systemd/rocefabd.service packaging/systemd/rocefab-agent.service \
		$(DESTDIR)$(UNITDIR)/
	install -m 0644 packaging/systemd/rocefab.sysusers $(DESTDIR)$(SYSUSERSDIR)/rocefab.conf
	install -m 0640 packaging/rocefabd.conf packaging/rocefab-agent.conf \
		$(DESTDIR)$(SYSCONFDIR)/rocefab/

clean:
	rm -rf build

-include $(ALL_OBJS:.o=.d)
