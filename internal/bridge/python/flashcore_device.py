"""What the worker says about the device it measures on (sdk.Device), and
the sizes of caches it flushes.

torch is imported where it is used, so this module loads without it.
"""

import contextlib
import os
import platform


def pick_device():
    import torch

    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def describe_device(device):
    """sdk.Device as JSON for the device the worker measures on."""
    import torch

    if device.type == "cuda":
        return _describe_gpu(torch, device)
    return {
        "kind": "cpu",
        "name": _cpu_name(),
        "cores": os.cpu_count() or 0,
        "runtime": f"torch {torch.__version__} (CPU, {torch.get_num_threads()} threads)",
    }


def _describe_gpu(torch, device):
    props = torch.cuda.get_device_properties(device)
    runtime = f"torch {torch.__version__}, CUDA {torch.version.cuda}"
    if torch.backends.cudnn.is_available():
        runtime += f", cuDNN {torch.backends.cudnn.version()}"
    out = {
        "kind": "gpu",
        "name": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "multiprocessors": props.multi_processor_count,
        "l2_bytes": int(getattr(props, "L2_cache_size", 0)),
        "memory_bytes": int(props.total_memory),
        "runtime": runtime,
    }
    uuid = device_uuid(props)
    if uuid:
        out["uuid"] = uuid
    for field, attr, scale in (("sm_clock_mhz", "clock_rate", 1e-3), ("mem_clock_mhz", "memory_clock_rate", 1e-3),
                               ("mem_bus_width_bits", "memory_bus_width", 1)):
        value = getattr(props, attr, 0)
        if value:
            out[field] = value * scale if scale != 1 else int(value)
    out.update({k: v for k, v in _nvml_maxima(device).items() if v})
    out.update(device_peaks(props.major, props.minor, props.multi_processor_count, out.get("sm_clock_mhz", 0),
                            out.get("mem_clock_mhz", 0), out.get("mem_bus_width_bits", 0)))
    return out


def device_uuid(props):
    """The GPU's UUID as nvidia-smi prints it ("GPU-..."), from torch's
    device properties; "" where torch does not give it."""
    uuid = str(getattr(props, "uuid", "") or "")
    if not uuid or uuid.startswith(("GPU-", "MIG-")):
        return uuid
    return "GPU-" + uuid


# Dense fp16 tensor-core FLOP per clock per SM, by compute capability: the
# same table as the Go CUDA plugins (cudakit/gpu), so % of peak means the
# same in every row (A100: 312 TF at 108 SMs and 1410 MHz; L4: 121 TF at 58
# SMs and 2040 MHz; H100 SXM: 989 TF at 132 SMs and 1830 MHz).
DENSE_FP16_FLOP_PER_CLOCK = {(8, 0): 2048, (8, 6): 1024, (8, 9): 1024, (9, 0): 4096}


def device_peaks(major, minor, sms, max_sm_clock_mhz, max_mem_clock_mhz, bus_width_bits):
    """Peak dense fp16 TFLOP/s (SMs x max SM clock x FLOP/clock/SM) and
    memory GB/s (two transfers per memory clock x bus width); 0 if unknown."""
    per_clock = DENSE_FP16_FLOP_PER_CLOCK.get((major, minor), 0)
    return {
        "peak_tflops": sms * max_sm_clock_mhz * 1e6 * per_clock / 1e12,
        "peak_gbps": 2 * max_mem_clock_mhz * 1e6 * bus_width_bits / 8 / 1e9,
    }


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvml_maxima(device):
    """Maximum SM and memory clocks and the bus width from NVML, where
    pynvml is installed; an empty dict otherwise."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
        return {
            "sm_clock_mhz": float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)),
            "mem_clock_mhz": float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)),
            "mem_bus_width_bits": int(pynvml.nvmlDeviceGetMemoryBusWidth(handle)),
            "driver": _text(pynvml.nvmlSystemGetDriverVersion()),
        }
    except Exception:  # pynvml missing, NVML unavailable, or an old driver
        return {}


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flush_bytes():
    """Twice the last-level cache, read from sysfs; 64 MiB when unknown."""
    sizes = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    with contextlib.suppress(OSError):
        for index in os.listdir(base):
            with contextlib.suppress(OSError, ValueError), open(f"{base}/{index}/size") as f:
                text = f.read().strip()
                sizes.append(int(text[:-1]) * 1024 if text.endswith("K") else int(text))
    return 2 * max(sizes) if sizes else 64 << 20
