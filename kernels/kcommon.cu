/* kcommon.cu: the launch-wide switches that every launcher of kernels/ reads (kcommon.cuh):
 * programmatic dependent launch on or off, and the kernel families a profiling run leaves out.
 * The backend sets them before its launches (backend_cuda.c). */
#include "kcommon.cuh"

/* Programmatic dependent launch on or off for every launcher. */
int k_pdl = 0;

extern "C" void k_set_pdl(int on) {
    k_pdl = on;
}

/* kernels.h K_SKIP_*: families left out of a step (profiling only: results are wrong). */
unsigned k_skip = 0;

extern "C" void k_set_skip(unsigned mask) {
    k_skip = mask;
}
