# kevent-lab: kevent forward-ported to Linux 6.1, built as a User-Mode Linux
# kernel, and a lab of UML hosts that tests it. See README.md.
#
#   make lab-run [LAB=default] [PROFILE=debug] [CAPTURE=SEG,...|all]
#                                build what is missing, run a lab (and capture segments)
#   make test                    lab driver unit tests, KUnit, the lab
#   make deps                    install the Debian packages (or print how)
#   make fresh-check             (root) lab-run and test in a clean Debian 12 root
#   make suites [SUITES=suites-quick]   the kernel's own selftests and stress-ng on the
#                                kevent kernel and without the series, compared
#   make bench                   the benchmarks: build/bench/, docs/performance.md
#   make lab-trace [LAB=trace] [HOST=a RUN=SUITE/PART] [EVENTS=kevent,...]
#                                one run with tracepoints on; the trace, told as a story,
#                                and the packets of the lab's segments (CAPTURE=SEG,...)
#   make lab-start|lab-status|lab-stop|lab-crash [LAB=...] [ID=...]   a lab left running
#   make exercise EX=NN [ANSWER=file]   check an answer to docs/exercises/NN-*.md
#   make cpu-check [LAB=cpu] [CPUS="Nehalem SandyBridge max"] [KVM=1]
#                                a lab in QEMU VMs that show other x86_64 CPUs (FP state sizes)
#   make smp-check               the series for x86_64 on 4 CPUs with preemption (QEMU):
#                                lockdep+KASAN and KCSAN kernels, lab smp, a removed fix caught
#
# Knobs: KSRC=<linux-6.1 tree> instead of Debian's linux-source-6.1,
#        JOBS=<n> for the kernel build, LAB=<name> from lab/labs/,
#        PROFILE=debug (KASAN, lockdep...) or vanilla (without the series),
#        smp or smp-kcsan (x86_64 kernels for QEMU, make smp-check).

SHELL      := /bin/bash
TOP        := $(CURDIR)
B          := $(TOP)/build
SRC        := $(B)/src
OBJ        := $(B)/obj
HDR        := $(B)/headers
RESULTS    := $(B)/results
KTAR       ?= /usr/src/linux-source-6.1.tar.xz
KSRC       ?=
LAB        ?= default
# The labs `make test` runs besides LAB, each checked against its signature
# (lab/labs/NAME/expected; crash fails on purpose); results in build/results/labs/NAME.
TEST_LABS  ?= star routed crash trace reliability naio conns tools web later
# The labs `make test` runs again on the debug kernel (PROFILE=debug), where
# any KASAN, lockdep, kmemleak or debug-objects report fails a host;
# results in build/results/debug/NAME.
DEBUG_LABS ?= $(LAB) fuzz reliability naio conns web later
JOBS       ?= $(shell echo $$(( $$(nproc) + 1 )))
FRAGMENTS  := $(TOP)/uml-config/base.config $(TOP)/uml-config/lab.config $(TOP)/uml-config/kunit.config \
	      $(TOP)/uml-config/kevent.config
# The tree a profile's kernel is built from, and the stamp that says it is
# up to date. Headers, testcases and selftests always come from $(SRC).
KTREE      := $(SRC)
KSTAMP     := $(B)/.series
# PROFILE=debug builds a second kernel, with KASAN, lockdep, kmemleak and
# object debugging (uml-config/debug.config), beside the lab one.
# PROFILE=vanilla builds the same kernel without kevent: Linux 6.1 with only
# the series' UML fixes (the um- patches, without which UML fails on this
# machine), from the same fragments but kevent.config, in a worktree of
# $(SRC); make suites runs the kernel's own test suites on both.
PROFILE    ?= lab
ifeq ($(PROFILE),lab)
KERNEL     := $(B)/linux
else ifeq ($(PROFILE),debug)
OBJ        := $(B)/obj-debug
KERNEL     := $(B)/linux-debug
FRAGMENTS  += $(TOP)/uml-config/debug.config
else ifeq ($(PROFILE),vanilla)
KTREE      := $(B)/src-vanilla
KSTAMP     := $(B)/.series-vanilla
OBJ        := $(B)/obj-vanilla
KERNEL     := $(B)/linux-vanilla
FRAGMENTS  := $(filter-out %/kevent.config,$(FRAGMENTS))
else ifeq ($(PROFILE),smp)
# The multiprocessor check (make smp-check): the series built for x86_64
# with preemption, booted by QEMU on several CPUs; lockdep, KASAN, PROVE_RCU
# and DEBUG_ATOMIC_SLEEP (uml-config/x86-lockdep.config). objtool needs
# libelf-dev, which make deps installs.
OBJ        := $(B)/obj-smp
KERNEL     := $(B)/bzImage-smp
else ifeq ($(PROFILE),smp-kcsan)
# The same with KCSAN, which excludes KASAN (uml-config/x86-kcsan.config).
OBJ        := $(B)/obj-smp-kcsan
KERNEL     := $(B)/bzImage-smp-kcsan
else
$(error PROFILE=$(PROFILE) is not a profile: use PROFILE=lab (the default), PROFILE=debug, PROFILE=vanilla, PROFILE=smp or PROFILE=smp-kcsan)
endif
# The kernel build's log (scripts/smp-fix-removed.sh names its own).
KLOG       ?= $(B)/kernel-build$(if $(filter-out lab,$(PROFILE)),-$(PROFILE)).log
# UML unless the profile is one of the x86_64 kernels of make smp-check.
ifneq ($(filter smp%,$(PROFILE)),)
KARCH      := x86_64
KTARGET    := bzImage
KIMAGE     := $(OBJ)/arch/x86/boot/bzImage
FRAGMENTS  := $(TOP)/uml-config/x86-smp.config $(TOP)/uml-config/kunit.config $(TOP)/uml-config/kevent.config \
	      $(TOP)/uml-config/x86-$(if $(filter smp-kcsan,$(PROFILE)),kcsan,lockdep).config
else
KARCH      := um
KTARGET    := linux
KIMAGE     := $(OBJ)/linux
endif
PATCHES    := $(TOP)/kernel-patches/series $(wildcard $(TOP)/kernel-patches/*.patch)
BUSYBOX    ?= /bin/busybox
# Looked up when a recipe runs, not when make starts: on a fresh machine
# ccache arrives with `deps.sh ensure`, a prerequisite of the first build.
CCACHE      = $(shell command -v ccache 2>/dev/null)
KMAKE       = $(MAKE) -C $(KTREE) O=$(OBJ) ARCH=$(KARCH) $(if $(CCACHE),CC="ccache gcc")
# Debian's python3 (python3-pytest is installed for it), not a pyenv one.
PYTHON     ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)

.PHONY: all deps kernel kernel-rebuild headers testcases selftests rootfs lab-run lab-clean kunit \
	lab-start lab-status lab-stop lab-crash lab-trace \
	unit test suites bench bench-smoke kernel-dev kernel-export series-prefixes checkpatch clean distclean help \
	exercise exercises-check fresh-check cpu-check smp-check FORCE

all: $(KERNEL) $(B)/rootfs.cpio

help:
	@sed -n '1,/^$$/p' Makefile

deps:
	@scripts/deps.sh install

# The README's two commands in a clean Debian 12 root made for the run by
# mmdebstrap (root only): what scripts/deps.sh forgets fails here.
fresh-check:
	@scripts/fresh-check.sh

# A lab (LAB=cpu unless given) on other CPUs than this machine's: Debian's
# kernel in QEMU, with a CPU model per kind of FP state; QEMU emulates the
# CPU, or with KVM=1 runs it on this one (AVX-512 models too).
cpu-check: | $(B)/.deps-ok
	@scripts/cpu-check.sh $(if $(filter command line environment,$(origin LAB)),$(foreach l,$(LAB),--lab $(l))) \
		$(foreach c,$(CPUS),--cpu $(c)) $(if $(KVM),--kvm)

# Every entry point first makes sure the packages are there.
$(B)/.deps-ok: scripts/deps.sh
	@scripts/deps.sh ensure
	@mkdir -p $(B) && touch $@

# ---- the kernel --------------------------------------------------------------

$(B)/.tree: | $(B)/.deps-ok
	@scripts/kernel-tree.sh $(SRC) "$(KSRC)" $(KTAR)
	@touch $@

$(B)/.series: $(B)/.tree $(PATCHES)
	@scripts/apply-series.sh $(SRC) $(TOP)/kernel-patches
	@touch $@

# The kernel without the series: a worktree of $(SRC) at `pristine`, with
# only the um- patches of the series applied.
$(B)/.series-vanilla: $(B)/.tree $(PATCHES)
	@test -e $(KTREE)/.git || git -C $(SRC) worktree add -q --detach $(KTREE) pristine
	@scripts/apply-series.sh $(KTREE) $(TOP)/kernel-patches um-
	@touch $@

$(OBJ)/.config: $(KSTAMP) $(FRAGMENTS) scripts/kernel-config.sh
	@KARCH=$(KARCH) scripts/kernel-config.sh $(KTREE) $(OBJ) $(FRAGMENTS)

# The kernel is rebuilt when the series or the config changed; kbuild then
# recompiles only what those changes touch (and ccache helps after that).
$(KERNEL): $(OBJ)/.config $(KSTAMP)
	@echo "  KERNEL  make ARCH=$(KARCH) $(KTARGET) (a few minutes from scratch)"
	@scripts/kbuild.sh $(KLOG) $(KMAKE) -j$(JOBS) $(KTARGET)
	@ln -f $(KIMAGE) $@

kernel: $(KERNEL)

# After editing build/src by hand: rebuild without the dependency shortcut.
kernel-rebuild: $(OBJ)/.config
	$(KMAKE) -j$(JOBS) $(KTARGET)
	ln -f $(KIMAGE) $(KERNEL)

# The uapi headers of the patched tree, for the testcases.
$(HDR)/.stamp: $(B)/.series
	@echo "  HEADERS $(HDR)"
	@$(MAKE) -s -C $(SRC) O=$(B)/hdr ARCH=x86 INSTALL_HDR_PATH=$(HDR) headers_install
	@touch $@

headers: $(HDR)/.stamp

# ---- guest root --------------------------------------------------------------

testcases: $(B)/testcases/.stamp

# The sub-make decides what is out of date, so it always runs (FORCE); it
# touches the stamp only when it rebuilt a program, and make re-reads the
# stamp's time, so the guest's root below is repacked only then.
$(B)/testcases/.stamp: FORCE $(HDR)/.stamp
	@$(MAKE) -s -C testcases KSRC=$(SRC) HDR=$(HDR)/include OUT=$(B)/testcases

FORCE:

# The kernel's own selftests that lab suites runs (testcases/selftests.list),
# built from the patched tree; the same programs for both kernels.
$(B)/selftests/.stamp: testcases/selftests.list scripts/build-selftests.sh $(HDR)/.stamp
	@rm -rf $(B)/selftests/bin
	@scripts/build-selftests.sh $(SRC) $(HDR)/include $(B)/selftests testcases/selftests.list
	@touch $@

selftests: $(B)/selftests/.stamp

$(B)/rootfs.cpio: $(B)/testcases/.stamp $(B)/selftests/.stamp $(KERNEL) rootfs/init rootfs/lab_trace \
		rootfs/initramfs.list rootfs/mkinitramfs.sh
	@rootfs/mkinitramfs.sh $(OBJ)/usr/gen_init_cpio $(BUSYBOX) $(B)/testcases $@ $(B)/selftests/bin

rootfs: $(B)/rootfs.cpio

# ---- running -----------------------------------------------------------------

LAB_RESULTS ?= $(RESULTS)

lab-run: $(KERNEL) $(B)/rootfs.cpio
	@$(PYTHON) lab/labctl run --lab $(LAB) --kernel $(KERNEL) \
		--rootfs $(B)/rootfs.cpio --results $(LAB_RESULTS) $(if $(EXPECT),--expect) \
		$(if $(CAPTURE),--capture $(CAPTURE))

# A run with tracepoints on (docs/internals.md): by default lab trace, one
# TCP message through kevent_echo; the trace lands in build/results/trace.
lab-trace: $(KERNEL) $(B)/rootfs.cpio
	@$(PYTHON) lab/labctl trace --lab $(if $(filter command line,$(origin LAB)),$(LAB),trace) \
		--kernel $(KERNEL) --rootfs $(B)/rootfs.cpio --results $(RESULTS)/trace \
		$(HOST) $(RUN) $(if $(EVENTS),--events $(EVENTS)) --capture $(or $(CAPTURE),all)

# One boot with no lab: the built-in KUnit suites run, and the kernel's own
# kunit.py parses the console.
kunit: $(KERNEL) $(B)/rootfs.cpio
	@$(PYTHON) lab/labctl kunit --kernel $(KERNEL) --rootfs $(B)/rootfs.cpio \
		--results $(RESULTS) --kunit-py $(SRC)/tools/testing/kunit/kunit.py

unit: | $(B)/.deps-ok
	@mkdir -p $(RESULTS)
	@$(PYTHON) -m pytest -q lab/tests --junitxml=$(RESULTS)/unit.xml

# Everything a regression run needs. Each part runs even if an earlier one
# failed; the last line counts all of them.
test:
	@rm -rf $(RESULTS)/unit.xml $(RESULTS)/kunit.json $(RESULTS)/summary.json $(RESULTS)/labs \
		$(RESULTS)/debug $(RESULTS)/suites-quick; \
	rc=0; built=1; \
	echo "== build"; $(MAKE) -s all || { built=0; rc=1; echo "the build failed: KUnit and the labs do not run" >&2; }; \
	echo "== lab driver unit tests"; $(MAKE) -s unit || rc=1; \
	if [ $$built = 1 ]; then \
		echo "== KUnit"; $(MAKE) -s kunit || rc=1; \
		echo "== lab $(LAB)"; \
		$(MAKE) -s lab-run LAB=$(LAB) $(if $(wildcard lab/labs/$(LAB)/expected),EXPECT=1) || rc=1; \
		for l in $(TEST_LABS); do \
			echo "== lab $$l"; \
			$(MAKE) -s lab-run LAB=$$l LAB_RESULTS=$(RESULTS)/labs/$$l EXPECT=1 || rc=1; \
		done; \
		echo "== the kernel's own suites, quick part (lab suites-quick): with and without the series"; \
		$(MAKE) -s suites SUITES=suites-quick SUITES_RESULTS=$(RESULTS)/suites-quick \
			COMPARE_RESULTS=$(RESULTS)/labs/suites-quick || rc=1; \
		echo "== exercises: reference solutions pass, starters fail as recorded"; \
		$(MAKE) -s exercises-check || rc=1; \
		echo "== debug kernel (KASAN, lockdep, kmemleak, debug objects)"; \
		if $(MAKE) -s kernel PROFILE=debug; then \
			for l in $(DEBUG_LABS); do \
				echo "== lab $$l, PROFILE=debug"; \
				$(MAKE) -s lab-run PROFILE=debug LAB=$$l LAB_RESULTS=$(RESULTS)/debug/$$l || rc=1; \
			done; \
		else rc=1; echo "the debug kernel did not build: its labs do not run" >&2; fi; \
		echo "== lab smp: the series for x86_64 on 4 CPUs with preemption, lockdep and KASAN (QEMU)"; \
		$(MAKE) -s lab-run PROFILE=smp LAB=smp LAB_RESULTS=$(RESULTS)/labs/smp || rc=1; \
		echo "== benchmarks at smoke sizes (lab bench-smoke)"; $(MAKE) -s bench-smoke || rc=1; \
		echo "== lab cpu on other x86_64 CPUs: Nehalem, SandyBridge, max (QEMU, emulated; scripts/cpu-check.sh)"; \
		scripts/cpu-check.sh --results $(RESULTS)/labs || rc=1; \
	fi; \
	$(PYTHON) lab/labctl total --results $(RESULTS) || rc=1; \
	exit $$rc

# ---- the kernel's own suites ---------------------------------------------------
# make suites: the kernel's selftests of what the series touches and
# stress-ng's event and network stressors (lab suites), run on the kevent
# kernel and on the same kernel without the series (PROFILE=vanilla), then
# compared test by test: a verdict that differs fails (labctl compare).
# SUITES=suites-quick is the short part that make test runs. The runs go to
# SUITES_RESULTS/kevent and /vanilla, the comparison to COMPARE_RESULTS.
SUITES          ?= suites
SUITES_RESULTS  ?= $(RESULTS)/suites/$(SUITES)
COMPARE_RESULTS ?= $(SUITES_RESULTS)/compare

suites:
	@$(MAKE) -s all PROFILE=lab && $(MAKE) -s kernel PROFILE=vanilla
	@rc=0; \
	for side in kevent vanilla; do \
		kernel=$(B)/linux; [ $$side = kevent ] || kernel=$(B)/linux-vanilla; \
		echo "== lab $(SUITES) on the $$side kernel ($$kernel)"; \
		rm -rf $(SUITES_RESULTS)/$$side; mkdir -p $(SUITES_RESULTS); \
		$(PYTHON) lab/labctl run --lab $(SUITES) --kernel $$kernel --rootfs $(B)/rootfs.cpio \
			--results $(SUITES_RESULTS)/$$side 2>&1 | tee $(SUITES_RESULTS)/$$side.log | \
			grep --line-buffered '^\[lab '; \
		echo "   $$(tail -n 1 $(SUITES_RESULTS)/$$side.log) on its own (the same on both kernels is no failure)"; \
	done; \
	echo "== lab $(SUITES): the two kernels compared, test by test"; \
	$(PYTHON) lab/labctl compare --lab $(SUITES) --kevent $(SUITES_RESULTS)/kevent \
		--vanilla $(SUITES_RESULTS)/vanilla --results $(COMPARE_RESULTS) || rc=1; \
	exit $$rc

# ---- the multiprocessor check (issue 33) ---------------------------------------
# make smp-check: the series built for x86_64 with kernel preemption and
# booted by QEMU on four CPUs (TCG; docs/lab.md, "The multiprocessor
# check"), lab smp on two kernels: PROFILE=smp (lockdep, KASAN, PROVE_RCU,
# DEBUG_ATOMIC_SLEEP) and PROFILE=smp-kcsan (KCSAN). Then the proof that
# the check sees a race: the series with an earlier race fix taken out,
# in a scratch tree, must fail lab smp-proof (scripts/smp-fix-removed.sh).
# make test runs lab smp on the lockdep/KASAN kernel.
SMP_RESULTS ?= $(RESULTS)/smp

smp-check: | $(B)/.deps-ok
	@rc=0; \
	for p in smp smp-kcsan; do \
		echo "== lab smp, PROFILE=$$p: the x86_64 kernel on 4 CPUs in QEMU"; \
		$(MAKE) -s lab-run PROFILE=$$p LAB=smp LAB_RESULTS=$(SMP_RESULTS)/$$p || rc=1; \
	done; \
	grep -a -q 'kcsan: enabled early' $(SMP_RESULTS)/smp-kcsan/s.console.log || \
		{ rc=1; echo "smp-check: the KCSAN kernel never said 'kcsan: enabled early': it checked nothing" >&2; }; \
	echo "== the check sees a race: the series without an earlier race fix must fail"; \
	scripts/smp-fix-removed.sh --results $(SMP_RESULTS)/fix-removed || rc=1; \
	exit $$rc

# ---- exercises (docs/exercises/) --------------------------------------------
# make exercise EX=01 [ANSWER=my-echo.c]: the answer and the exercise's
# checkers are built into build/exercises/NN/bin beside the testcases (never
# into build/testcases), packed into their own rootfs, and the lab
# lab/labs/ex-NN-NAME runs them; results in build/exercises/NN/results.
EXERCISES  := $(sort $(notdir $(wildcard exercises/[0-9][0-9]-*)))
EX_ENV      = KERNEL=$(KERNEL) GEN_INIT_CPIO=$(OBJ)/usr/gen_init_cpio BUSYBOX=$(BUSYBOX) \
	      KSRC=$(SRC) HDR=$(HDR)/include TESTCASES=$(B)/testcases PYTHON=$(PYTHON)

exercise: $(KERNEL) testcases
	@$(EX_ENV) exercises/exercise.sh "$(EX)" $(if $(ANSWER),"$(ANSWER)")

# That every check can fail: each exercise's lab with its reference solution
# (must pass) and with its untouched starter (must fail exactly as the lab's
# signature, lab/labs/ex-NN-NAME/expected, records). Results under
# build/results/labs/, where labctl total counts them.
EX_CHECK_RESULTS ?= $(RESULTS)/labs
exercises-check: $(KERNEL) testcases
	@rc=0; for ex in $(EXERCISES); do \
		n=$${ex%%-*}; sol=$$(ls exercises/$$ex/solution/answer.*); \
		rm -rf $(EX_CHECK_RESULTS)/ex-$$ex.solution $(EX_CHECK_RESULTS)/ex-$$ex.starter; \
		echo "== exercise $$ex, reference solution $$sol: must pass"; \
		$(EX_ENV) exercises/exercise.sh $$ex $$sol --out $(B)/exercises/$$n-solution \
			--results $(EX_CHECK_RESULTS)/ex-$$ex.solution || rc=1; \
		echo "== exercise $$ex, untouched starter: must fail as lab/labs/ex-$$ex/expected says"; \
		$(EX_ENV) exercises/exercise.sh $$ex --out $(B)/exercises/$$n-starter \
			--results $(EX_CHECK_RESULTS)/ex-$$ex.starter --expect || rc=1; \
	done; exit $$rc

# ---- benchmarks --------------------------------------------------------------
# make bench: lab/labs/bench (hosts pinned to CPUs), then the lab's own
# timings, into build/bench/ (bench.json, table.txt, *.svg) and
# docs/performance.md. Not part of make test, which runs bench-smoke: every
# benchmark at tiny sizes, checking its counts, so that none of them rots.
BENCH       := $(B)/bench

bench: $(KERNEL) $(B)/rootfs.cpio
	@rm -rf $(BENCH) && mkdir -p $(BENCH)
	@echo "== warm build (make all with nothing to do)"
	@t0=$$(date +%s.%N); $(MAKE) -s all; t1=$$(date +%s.%N); \
	echo "$$t1 - $$t0" | bc > $(BENCH)/warm_build_s
	@echo "== the kernel rebuilt after a change to one kevent file"
	@touch $(SRC)/kernel/kevent/kevent_user.c; t0=$$(date +%s.%N); \
	$(MAKE) -s kernel-rebuild >$(BENCH)/rebuild.log 2>&1 || { tail $(BENCH)/rebuild.log; exit 1; }; \
	t1=$$(date +%s.%N); echo "$$t1 - $$t0" | bc > $(BENCH)/rebuild_one_file_s
	@echo "== the kernel built cold: an empty build directory, ccache off (minutes)"
	@rm -rf $(B)/obj-cold; t0=$$(date +%s.%N); \
	{ scripts/kernel-config.sh $(SRC) $(B)/obj-cold $(FRAGMENTS) && \
	  CCACHE_DISABLE=1 $(MAKE) -C $(SRC) O=$(B)/obj-cold ARCH=um -j$(JOBS) linux; } \
		>$(BENCH)/cold-build.log 2>&1 || { tail $(BENCH)/cold-build.log; exit 1; }; \
	t1=$$(date +%s.%N); echo "$$t1 - $$t0" | bc > $(BENCH)/cold_build_s; \
	find $(B)/obj-cold -name '*.o' ! -name '*built-in*' ! -name '*.mod.o' | wc -l > $(BENCH)/cold_build_objects; \
	echo "  $$(cat $(BENCH)/cold_build_s) s, $$(cat $(BENCH)/cold_build_objects) files compiled"; \
	rm -rf $(B)/obj-cold
	@echo "== lab bench"
	@rc=0; $(PYTHON) lab/labctl run --lab bench --kernel $(KERNEL) --rootfs $(B)/rootfs.cpio \
		--results $(BENCH)/lab || rc=1; \
	echo "== warm make lab-run (lab $(LAB))"; \
	t0=$$(date +%s.%N); $(MAKE) -s lab-run LAB_RESULTS=$(BENCH)/lab-run >$(BENCH)/lab-run.log 2>&1 || rc=1; \
	t1=$$(date +%s.%N); tail -n 1 $(BENCH)/lab-run.log; \
	$(PYTHON) lab/labctl bench --results $(BENCH)/lab --out $(BENCH) --doc docs/performance.md \
		--timing warm_build_s=$$(cat $(BENCH)/warm_build_s) \
		--timing cold_build_s=$$(cat $(BENCH)/cold_build_s) \
		--timing cold_build_objects=$$(cat $(BENCH)/cold_build_objects) \
		--timing rebuild_one_file_s=$$(cat $(BENCH)/rebuild_one_file_s) \
		--timing lab_run_s=$$(echo "$$t1 - $$t0" | bc) || rc=1; \
	exit $$rc

# The benchmarks at smoke sizes: results in LAB_RESULTS (make test: under
# build/results/labs/, so that labctl total counts them), figures beside them.
BENCH_SMOKE_RESULTS ?= $(RESULTS)/labs/bench-smoke
bench-smoke: $(KERNEL) $(B)/rootfs.cpio
	@rc=0; $(PYTHON) lab/labctl run --lab bench-smoke --kernel $(KERNEL) --rootfs $(B)/rootfs.cpio \
		--results $(BENCH_SMOKE_RESULTS) || rc=1; \
	$(PYTHON) lab/labctl bench --results $(BENCH_SMOKE_RESULTS) \
		--out $(BENCH_SMOKE_RESULTS)/bench >/dev/null || rc=1; \
	exit $$rc

# ---- kernel development ------------------------------------------------------

# Check the series out as commits on branch `dev` in build/src, to edit there.
kernel-dev: $(B)/.series
	cd $(SRC) && git checkout -q -B dev pristine && git reset -q --hard pristine && \
	for p in $$(sed -e 's/#.*//' $(TOP)/kernel-patches/series); do \
		git -c user.name=kevent-lab -c user.email=kevent-lab@localhost am -q $(TOP)/kernel-patches/$$p || exit 1; \
	done && git write-tree > .git/kevent-applied-tree
	@echo "build/src is on branch dev with the series as commits; edit, commit, then make kernel-export"

kernel-export:
	scripts/export-series.sh $(SRC) $(TOP)/kernel-patches

# That every prefix of the series builds on its own (objects in
# build/obj-prefix). Most patches rebuild a few files in 20 s; those that
# change a widely included header (0001, 0006, 0009, 0010) most of the
# kernel: 21 minutes in all on 2 cores, the first time.
series-prefixes: $(B)/.tree
	@scripts/series-prefixes.sh $(SRC) $(B)/obj-prefix $(FRAGMENTS)

# Every patch checkpatch.pl --strict clean. FILE_PATH_CHANGES is off: the
# MAINTAINERS entry for kernel/kevent/ comes with the first patch, and
# checkpatch looks for it in each patch that adds a file. (Paths must be
# absolute: relative ones are taken for files of the tree.)
checkpatch: $(B)/.tree
	@/usr/bin/python3 -c 'import ply, git' 2>/dev/null || \
		{ echo "checkpatch: its SPDX check needs: sudo apt-get install python3-ply python3-git" >&2; exit 1; }
	@for p in $$(sed -e 's/#.*//' kernel-patches/series); do \
		PATH=/usr/bin:$$PATH perl $(SRC)/scripts/checkpatch.pl --strict --terse -q \
			--ignore FILE_PATH_CHANGES --root=$(SRC) $(TOP)/kernel-patches/$$p || exit 1; \
	done

clean:
	rm -rf $(RESULTS) $(B)/lab $(B)/testcases $(B)/rootfs.cpio*

lab-clean:
	@$(PYTHON) lab/labctl clean --results $(RESULTS)

# A lab left running: make lab-start LAB=star, then lab/labctl console|exec.
# ID=N picks the instance when a lab was started more than once.
lab-start: $(KERNEL) $(B)/rootfs.cpio
	@$(PYTHON) lab/labctl start $(LAB) --kernel $(KERNEL) --rootfs $(B)/rootfs.cpio

lab-status lab-stop lab-crash:
	@$(PYTHON) lab/labctl $(@:lab-%=%) $(LAB) $(if $(ID),--id $(ID))

distclean:
	rm -rf $(B)
