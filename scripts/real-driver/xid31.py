# A CUDA kernel that writes to an unmapped address: the driver kills the context and logs an
# application XID (31, MMU fault). Nothing about the GPU changes; it is any buggy program's crash.
import sys, time
print("start", time.time(), flush=True)
try:
    import cupy as cp
    k = cp.RawKernel(r'''extern "C" __global__ void bad(int *p) { *((int *)0x10) = 1; }''', 'bad')
    k((1,), (1,), (cp.zeros(1, dtype=cp.int32),))
    cp.cuda.runtime.deviceSynchronize()
    print("no fault?", flush=True)
except Exception as e:
    print("fault:", type(e).__name__, str(e)[:300], flush=True)
print("end", time.time(), flush=True)
