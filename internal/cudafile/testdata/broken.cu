// Does not compile: the compile test checks that nvcc's log reaches the error.
extern "C" __global__ void broken(float* o) { o[0] = undefined_name; }
