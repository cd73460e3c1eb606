"""Log text exactly as real machines print it, for the digital twin.

Pure functions from values to lines. Every format is copied from a real line: the shared real
logs and samples (``../shared/data``, copied to tests/fixtures/sim_formats/) or public lines
quoted with their sources in tests/fixtures/sim_formats/public_lines.jsonl; each module's
docstring names its samples and says where a value had to be chosen.

- ``kernel``: dmesg / journalctl / syslog prefixes and multi-line kernel messages
- ``xid``, ``gpu_events``: NVIDIA Xid lines, PCI addresses, the driver's companion lines
- ``host``: OOM killer, full and failing disks, shared-memory bus errors
- ``cuda``: CUDA errors, device-side asserts, CUDA OOM as PyTorch prints them
- ``nccl``, ``watchdog``: NCCL_DEBUG lines, NCCL errors, the ProcessGroupNCCL watchdog
- ``training``: Megatron-LM iteration lines, fp16 overflow skips, NaN reports
- ``traceback``: Python tracebacks with torchrun's rank prefixes and failure summary
- ``pyspy``: ``py-spy dump`` text and the stacks of hung ranks
"""
