// A CPU-bound C++ program for the DWARF unwinding test (tests/ebpf_unwind.rs): nearly all of
// its time is in a class template's member, reached through a namespaced function template:
// main -> unwind::level1 -> unwind::level2<unsigned long> -> unwind::Spinner<unsigned long>::spin.
// Built `g++ -O2`, which omits frame pointers by default. With demangle = "simplified" the
// frames read unwind::Spinner::spin, unwind::level2, unwind::level1, main.
//
// noipa: g++ may neither inline, clone nor specialise these across the calls; each caller uses
// its callee's result after the call, so none is a tail call.
//
// unwind_cpp            spin forever
// unwind_cpp SECONDS    spin for SECONDS of wall time, then exit
#include <chrono>
#include <cstdlib>

namespace unwind {

template <typename T> struct Spinner {
	T mul;
	__attribute__((noipa)) T spin(T seed) const
	{
		T x = seed;
		for (unsigned i = 0; i < 2000000; i++)
			x = x * mul + T(1442695040888963407UL);
		return x;
	}
};

template <typename T> __attribute__((noipa)) T level2(T seed)
{
	Spinner<T> s{T(6364136223846793005UL)};
	T x = s.spin(seed);
	return x ^ (x >> 29);
}

__attribute__((noipa)) unsigned long level1(unsigned long seed)
{
	unsigned long x = level2<unsigned long>(seed + 1);
	return x ^ (x >> 31);
}

} // namespace unwind

static volatile unsigned long sink;

int main(int argc, char **argv)
{
	double limit = argc > 1 ? std::atof(argv[1]) : 0;
	auto start = std::chrono::steady_clock::now();
	for (unsigned long spins = 1;; spins++) {
		sink = unwind::level1(sink + spins);
		if (limit > 0 && (spins & 15) == 0 &&
		    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
			    limit)
			break;
	}
	return 0;
}
