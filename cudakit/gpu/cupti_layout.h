/*
 * The parts of CUPTI's activity records that FlashCore reads, declared here
 * so that the CUDA plugins build without CUPTI's headers and load CUPTI at
 * run time (cupti_cuda.go). CUPTI only appends fields to its records from
 * one version to the next; cupti_layout_test.go checks these offsets
 * against every cupti_activity.h it finds (CUDA 11.8's CUpti_ActivityKernel4
 * and 13's CUpti_ActivityKernel10 agree).
 */
#ifndef FLASHCORE_CUPTI_LAYOUT_H
#define FLASHCORE_CUPTI_LAYOUT_H

/* CUpti_ActivityKind values. */
#define FC_CUPTI_KIND_MEMSET 2
#define FC_CUPTI_KIND_KERNEL 3
#define FC_CUPTI_KIND_DRIVER 4
#define FC_CUPTI_KIND_CONCURRENT_KERNEL 10
#define FC_CUPTI_KIND_EXTERNAL_CORRELATION 39

/* CUpti_ExternalCorrelationKind CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0. */
#define FC_CUPTI_EXTERNAL_CUSTOM0 3

/* CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, CUPTI_ERROR_MAX_LIMIT_REACHED. */
#define FC_CUPTI_FLUSH_FORCED 1
#define FC_CUPTI_ERROR_MAX_LIMIT_REACHED 12

/* Kernel records (CUpti_ActivityKernel4 and later). */
#define FC_KERNEL_START 16
#define FC_KERNEL_END 24
#define FC_KERNEL_CORRELATION 92
#define FC_KERNEL_NAME 104

/* Memset records (CUpti_ActivityMemset and later). */
#define FC_MEMSET_START 16
#define FC_MEMSET_END 24
#define FC_MEMSET_CORRELATION 44

/* CUpti_ActivityExternalCorrelation. */
#define FC_EXTERNAL_KIND 4
#define FC_EXTERNAL_ID 8
#define FC_EXTERNAL_CORRELATION 16

#endif
