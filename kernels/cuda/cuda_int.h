/* Shared by the CUDA backend's host files (cuda_host.c, cuda_gather.c). Private to kernels/cuda/. */
#ifndef FC_CUDA_INT_H
#define FC_CUDA_INT_H

/* Set this thread's cuda_last_error() message; returns rc. */
int cuda_set_error(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
