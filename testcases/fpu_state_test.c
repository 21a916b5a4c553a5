// SPDX-License-Identifier: GPL-2.0+
/*
 * fpu_state_test: a guest program's vector registers, kept by UML.
 *
 * UML holds each process's FP state in memory and hands it to the host
 * with ptrace at every switch; its size is the host's XSAVE area, learnt
 * at boot (kernel-patches/0033). What the tests assert:
 *  - zmm0-31 and k1-7 hold their values across a signal handler that
 *    overwrites them all, and ymm0-15 where the host has AVX only;
 *  - the signal frame holds that state, marked as the host marks its own
 *    frames (FP_XSTATE_MAGIC1, sizes, FP_XSTATE_MAGIC2), and what the
 *    handler writes into the frame is what the program has after it;
 *  - the frame fits an alternate stack of 8 KiB (SIGSTKSZ), as on the host;
 *  - two threads of one process, and two processes, that sleep in turn
 *    each keep their own registers;
 *  - exec hands none of a program's register values to the next program.
 * The AVX-512 cases skip where the host has no AVX-512, saying so.
 *
 * The registers are loaded, used across the system call and stored in one
 * asm block each, so that no compiled code runs in between.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "kselftest_harness.h"

#define NZMM 32
#define NK 8			/* k0 is not touched: slots 1-7 are used */
#define MARK 0x5eedfa11c0ffee00ULL
#define EXEC_CHECK_ENV "FPU_STATE_TEST_EXEC_CHECK"

/* FP_XSTATE_MAGIC1/2 and the software-reserved bytes (asm/sigcontext.h) */
#define XSTATE_MAGIC1 0x46505853U
#define XSTATE_MAGIC2 0x46505845U
#define SW_RESERVED 464
#define XSTATE_BV 512

struct zmm_regs {
	uint64_t z[NZMM][8] __attribute__((aligned(64)));
	uint16_t k[NK];
};

static uint64_t xcr0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

static int os_xsave(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE);
}

static int have_avx512(void)
{
	unsigned int a, b, c, d;

	if (!os_xsave() || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_AVX512F))
		return 0;
	return (xcr0() & 0xe6) == 0xe6;	/* SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM */
}

static int have_avx(void)
{
	unsigned int a, b, c, d;

	return os_xsave() && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_AVX) &&
	       (xcr0() & 6) == 6;
}

/* Offset of XSAVE component @i in the standard format (CPUID leaf 0xD). */
static unsigned int xstate_offset(unsigned int i)
{
	unsigned int size, off, c, d;

	__cpuid_count(0xd, i, size, off, c, d);
	return off;
}

static void fill(struct zmm_regs *r, uint64_t seed)
{
	for (int i = 0; i < NZMM; i++)
		for (int l = 0; l < 8; l++)
			r->z[i][l] = seed ^ ((uint64_t)i << 8) ^ l;
	for (int i = 1; i < NK; i++)
		r->k[i] = (uint16_t)(seed >> 16) ^ (0x1111 * i);
}

/* The first difference between @want and @got, or -1 */
static int first_diff(const struct zmm_regs *want, const struct zmm_regs *got, int *lane)
{
	for (int i = 0; i < NZMM; i++)
		for (int l = 0; l < 8; l++)
			if (want->z[i][l] != got->z[i][l]) {
				*lane = l;
				return i;
			}
	for (int i = 1; i < NK; i++)
		if (want->k[i] != got->k[i]) {
			*lane = -1;
			return 100 + i;
		}
	return -1;
}

#define LOAD_ZMM(n) "vmovdqu64 " #n "*64(%[in]), %%zmm" #n "\n"
#define STORE_ZMM(n) "vmovdqu64 %%zmm" #n ", " #n "*64(%[out])\n"
#define ALL_ZMM(m) m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7) m(8) m(9) m(10) \
	m(11) m(12) m(13) m(14) m(15) m(16) m(17) m(18) m(19) m(20) m(21) m(22) \
	m(23) m(24) m(25) m(26) m(27) m(28) m(29) m(30) m(31)
#define LOAD_K(n) "kmovw " #n "*2+2048(%[in]), %%k" #n "\n"
#define STORE_K(n) "kmovw %%k" #n ", " #n "*2+2048(%[out])\n"
#define ALL_K(m) m(1) m(2) m(3) m(4) m(5) m(6) m(7)
#define ZMM_CLOBBERS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", \
	"xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", \
	"xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", \
	"xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", \
	"xmm31", "k1", "k2", "k3", "k4", "k5", "k6", "k7"

/*
 * Load @in into zmm0-31 and k1-7, make the system call @nr(a0, a1, a2)
 * @times times with nothing else in between, and store the registers to @out.
 */
__attribute__((target("avx512f")))
static void zmm_across_syscall(const struct zmm_regs *in, struct zmm_regs *out,
			       long nr, long a0, long a1, long a2, int times)
{
	__asm__ volatile(ALL_ZMM(LOAD_ZMM) ALL_K(LOAD_K)
			 "1:\n"
			 "mov %[nr], %%rax\n"
			 "mov %[a0], %%rdi\n"
			 "mov %[a1], %%rsi\n"
			 "mov %[a2], %%rdx\n"
			 "syscall\n"
			 "decl %[times]\n"
			 "jnz 1b\n"
			 ALL_ZMM(STORE_ZMM) ALL_K(STORE_K)
			 : [times] "+m"(times)
			 : [in] "r"(in), [out] "r"(out), [nr] "m"(nr), [a0] "m"(a0), [a1] "m"(a1),
			   [a2] "m"(a2)
			 : "rax", "rdi", "rsi", "rdx", "rcx", "r11", "memory", ZMM_CLOBBERS);
}

_Static_assert(offsetof(struct zmm_regs, k) == 2048, "the asm addresses k[] at 2048");

__attribute__((target("avx512f")))
static void clobber_zmm(void)
{
	static struct zmm_regs junk;

	fill(&junk, 0xdeadbeefdeadbeefULL);
	__asm__ volatile(ALL_ZMM(LOAD_ZMM) ALL_K(LOAD_K)
			 : : [in] "r"(&junk) : "memory", ZMM_CLOBBERS);
}

static void on_signal_clobber(int sig)
{
	clobber_zmm();
}

#define LOAD_YMM(n) "vmovdqu " #n "*32(%[in]), %%ymm" #n "\n"
#define STORE_YMM(n) "vmovdqu %%ymm" #n ", " #n "*32(%[out])\n"
#define ALL_YMM(m) m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7) m(8) m(9) m(10) \
	m(11) m(12) m(13) m(14) m(15)

__attribute__((target("avx")))
static void on_signal_clobber_ymm(int sig)
{
	static uint64_t junk[16][4];

	memset(junk, 0x99, sizeof(junk));
	__asm__ volatile(ALL_YMM(LOAD_YMM) : : [in] "r"(junk) : "memory",
			 "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
			 "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

/* Load @in into ymm0-15, kill(getpid(), SIGUSR1), store them to @out */
__attribute__((target("avx")))
static void ymm_across_kill(const uint64_t (*in)[4], uint64_t (*out)[4])
{
	long pid = getpid();

	__asm__ volatile(ALL_YMM(LOAD_YMM)
			 "mov %[nr], %%rax\n"
			 "mov %[pid], %%rdi\n"
			 "mov %[sig], %%rsi\n"
			 "syscall\n"
			 ALL_YMM(STORE_YMM)
			 : : [in] "r"(in), [out] "r"(out), [nr] "i"(SYS_kill), [pid] "m"(pid),
			   [sig] "i"(SIGUSR1)
			 : "rax", "rdi", "rsi", "rcx", "r11", "memory",
			   "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
			   "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

static void catch(int sig, void (*fn)(int, siginfo_t *, void *), void (*plain)(int),
		  int flags)
{
	struct sigaction sa = { .sa_flags = flags };

	if (fn) {
		sa.sa_sigaction = fn;
		sa.sa_flags |= SA_SIGINFO;
	} else {
		sa.sa_handler = plain;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static const char *no_avx512(void)
{
	return "the host has no AVX-512 (CPUID.7:EBX.AVX512F and XCR0 bits 5-7), so a guest cannot use zmm registers";
}

#define NEED_AVX512() do {				\
	if (!have_avx512())				\
		SKIP(return, "%s", no_avx512());	\
} while (0)

TEST(zmm_and_opmask_survive_a_handler_that_overwrites_them)
{
	static struct zmm_regs in, out;
	int lane, i;

	NEED_AVX512();
	fill(&in, MARK);
	catch(SIGUSR1, NULL, on_signal_clobber, 0);
	zmm_across_syscall(&in, &out, SYS_kill, getpid(), SIGUSR1, 0, 1);
	i = first_diff(&in, &out, &lane);
	EXPECT_EQ(-1, i) TH_LOG("register %s%d (lane %d) changed across the signal",
				i >= 100 ? "k" : "zmm", i >= 100 ? i - 100 : i, lane);
}

/* What the SA_SIGINFO handler found in its frame, and what it wrote there */
static struct {
	uint32_t magic1, extended_size, xstate_size, magic2;
	uint64_t xfeatures, xstate_bv;
	uint64_t zmm0[8], zmm17[8], k1;
} seen;
static const uint16_t new_k1 = 0x7a7a;
static const uint64_t new_zmm17 = 0x0123456789abcdefULL;

static void on_signal_read_frame(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	unsigned char *fp = (void *)uc->uc_mcontext.fpregs;
	unsigned int k = xstate_offset(5), hi256 = xstate_offset(6), hi16 = xstate_offset(7);

	memcpy(&seen.magic1, fp + SW_RESERVED, 4);
	memcpy(&seen.extended_size, fp + SW_RESERVED + 4, 4);
	memcpy(&seen.xfeatures, fp + SW_RESERVED + 8, 8);
	memcpy(&seen.xstate_size, fp + SW_RESERVED + 16, 4);
	memcpy(&seen.xstate_bv, fp + XSTATE_BV, 8);
	if (seen.magic1 != XSTATE_MAGIC1 || seen.xstate_size < hi16 + 1024)
		return;
	memcpy(&seen.magic2, fp + seen.xstate_size, 4);
	/* zmm0: xmm0 in the legacy area, then ymm0's upper half, then zmm0's */
	memcpy(&seen.zmm0[0], fp + 160, 16);
	memcpy(&seen.zmm0[2], fp + xstate_offset(2), 16);
	memcpy(&seen.zmm0[4], fp + hi256, 32);
	memcpy(seen.zmm17, fp + hi16 + 64, 64);
	memcpy(&seen.k1, fp + k + 8, 8);

	/* What sigreturn must put back in the registers */
	for (int l = 0; l < 8; l++)
		memcpy(fp + hi16 + 64 + 8 * l, &new_zmm17, 8);
	memcpy(fp + k + 8, &(uint64_t){ new_k1 }, 8);
	clobber_zmm();
}

TEST(signal_frame_holds_the_avx512_state_and_gives_it_back)
{
	static struct zmm_regs in, out;
	int lane, i;

	NEED_AVX512();
	fill(&in, MARK);
	catch(SIGUSR2, on_signal_read_frame, NULL, 0);
	zmm_across_syscall(&in, &out, SYS_kill, getpid(), SIGUSR2, 0, 1);

	ASSERT_EQ(XSTATE_MAGIC1, seen.magic1) TH_LOG("the frame is not marked as an XSAVE area");
	EXPECT_EQ(seen.xstate_size + 4, seen.extended_size);
	EXPECT_EQ(XSTATE_MAGIC2, seen.magic2) TH_LOG("no FP_XSTATE_MAGIC2 after %u bytes",
						     seen.xstate_size);
	EXPECT_EQ(0xe7, seen.xfeatures & 0xe7) TH_LOG("xfeatures %#llx",
						     (unsigned long long)seen.xfeatures);
	EXPECT_EQ(0xe0, seen.xstate_bv & 0xe0) TH_LOG("xstate_bv %#llx: zmm state not saved",
						     (unsigned long long)seen.xstate_bv);
	EXPECT_EQ(0, memcmp(seen.zmm0, in.z[0], 64)) TH_LOG("zmm0 in the frame is not zmm0");
	EXPECT_EQ(0, memcmp(seen.zmm17, in.z[17], 64)) TH_LOG("zmm17 in the frame is not zmm17");
	EXPECT_EQ(in.k[1], seen.k1);

	/* After sigreturn: what the handler wrote, and the rest as before */
	EXPECT_EQ(new_k1, out.k[1]);
	for (int l = 0; l < 8; l++) {
		EXPECT_EQ(new_zmm17, out.z[17][l]);
		in.z[17][l] = new_zmm17;
	}
	in.k[1] = new_k1;
	i = first_diff(&in, &out, &lane);
	EXPECT_EQ(-1, i) TH_LOG("register %s%d (lane %d) is not what the frame held",
				i >= 100 ? "k" : "zmm", i >= 100 ? i - 100 : i, lane);
}

static void on_signal_note_stack(int sig, siginfo_t *si, void *ctx)
{
	clobber_zmm();
}

/*
 * 8 KiB (SIGSTKSZ) of alternate stack with no access below it: a frame
 * larger than the host's own (with the 8 KiB of AMX tile data, which a UML
 * process cannot use) would run into the guard page.
 */
TEST(avx512_frame_fits_an_alternate_stack_of_sigstksz)
{
	size_t page = sysconf(_SC_PAGESIZE), size = 8192;
	static struct zmm_regs in, out;
	int status, lane;
	pid_t pid;

	NEED_AVX512();
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *guard = mmap(NULL, page + size, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		stack_t ss = { .ss_sp = guard + page, .ss_size = size };

		if (guard == MAP_FAILED || mprotect(guard, page, PROT_NONE) ||
		    sigaltstack(&ss, NULL))
			_exit(2);
		catch(SIGUSR1, on_signal_note_stack, NULL, SA_ONSTACK);
		fill(&in, MARK);
		zmm_across_syscall(&in, &out, SYS_kill, getpid(), SIGUSR1, 0, 1);
		_exit(first_diff(&in, &out, &lane) == -1 ? 0 : 3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("the child died of signal %d",
					      WTERMSIG(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("3: registers changed; 2: no altstack");
}

struct sleeper {
	struct zmm_regs in, out;
	int diff, lane;
};

/* 20 sleeps of 1 ms: whoever sleeps, the other runs on UML's one CPU */
static void *sleep_with_zmm(void *arg)
{
	static const struct timespec ms = { 0, 1000000 };
	struct sleeper *s = arg;

	zmm_across_syscall(&s->in, &s->out, SYS_nanosleep, (long)&ms, 0, 0, 20);
	s->diff = first_diff(&s->in, &s->out, &s->lane);
	return NULL;
}

TEST(threads_of_one_process_keep_their_own_zmm)
{
	static struct sleeper a, b;
	pthread_t t;

	NEED_AVX512();
	fill(&a.in, MARK);
	fill(&b.in, ~MARK);
	ASSERT_EQ(0, pthread_create(&t, NULL, sleep_with_zmm, &b));
	sleep_with_zmm(&a);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(-1, a.diff) TH_LOG("main thread: register %d (lane %d) changed", a.diff, a.lane);
	EXPECT_EQ(-1, b.diff) TH_LOG("second thread: register %d (lane %d) changed", b.diff, b.lane);
}

TEST(processes_keep_their_own_zmm)
{
	static struct sleeper a, b;
	int status;
	pid_t pid;

	NEED_AVX512();
	fill(&a.in, MARK);
	fill(&b.in, ~MARK);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		sleep_with_zmm(&b);
		_exit(b.diff == -1 ? 0 : 1);
	}
	sleep_with_zmm(&a);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(-1, a.diff) TH_LOG("parent: register %d (lane %d) changed", a.diff, a.lane);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("child: its registers changed (status %#x)", status);
}

/*
 * Run as the program an exec started (EXEC_CHECK_ENV set): before main(),
 * look whether any zmm or k register still holds the old program's MARK.
 */
__attribute__((target("avx512f")))
static void __attribute__((constructor)) exec_check(void)
{
	static struct zmm_regs now;

	if (!getenv(EXEC_CHECK_ENV))
		return;
	__asm__ volatile(ALL_ZMM(STORE_ZMM) ALL_K(STORE_K) : : [out] "r"(&now) : "memory");
	for (int i = 0; i < NZMM; i++)
		for (int l = 0; l < 8; l++)
			if ((now.z[i][l] & ~0xffffULL) == (MARK & ~0xffffULL))
				_exit(10 + i);
	for (int i = 1; i < NK; i++)
		if (now.k[i] == (uint16_t)((MARK >> 16) ^ (0x1111 * i)))
			_exit(50 + i);
	_exit(0);
}

TEST(exec_hands_no_zmm_to_the_next_program)
{
	static struct zmm_regs in, out;
	int status;
	pid_t pid;

	NEED_AVX512();
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		static char *argv[] = { "fpu_state_test", NULL };
		static char *envp[] = { EXEC_CHECK_ENV "=1", NULL };

		fill(&in, MARK);
		/* execve() does not return: its zmm go with the old program */
		zmm_across_syscall(&in, &out, SYS_execve, (long)"/proc/self/exe", (long)argv,
				   (long)envp, 1);
		_exit(99);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("the new program found the old one's values (10+N: zmmN, 50+N: kN; 99: exec failed)");
}

TEST(ymm_survive_a_handler_that_overwrites_them)
{
	static uint64_t in[16][4] __attribute__((aligned(32))), out[16][4];

	if (!have_avx())
		SKIP(return, "the host has no AVX (CPUID.1:ECX.AVX and XCR0 bits 1-2)");
	for (int i = 0; i < 16; i++)
		for (int l = 0; l < 4; l++)
			in[i][l] = MARK ^ (i << 8) ^ l;
	catch(SIGUSR1, NULL, on_signal_clobber_ymm, 0);
	ymm_across_kill(in, out);
	for (int i = 0; i < 16; i++) {
		EXPECT_EQ(0, memcmp(in[i], out[i], 32)) TH_LOG("ymm%d changed across the signal", i);
	}
}

TEST_HARNESS_MAIN
