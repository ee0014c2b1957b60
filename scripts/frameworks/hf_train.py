"""Tiny HuggingFace transformers training loop, for recording framework traces under nsys.

The model is GPT-2 built from a config (random init, nothing downloaded): 2 layers, 2 heads,
64-wide embeddings, a 512-token vocabulary, 64-token sequences, batch 4. Each iteration copies a
pinned batch to the GPU, runs forward and backward, applies plain SGD and reads the loss with
loss.item() (the per-iteration host sync a logging loop has).

Switches (all off by default):
  --alloc managed     PyTorch's allocator replaced by a CUDAPluggableAllocator around
                      cudaMallocManaged/cudaFree (um_alloc.cu built to UM_ALLOC_SO, default
                      /tmp/um_alloc.so): no caching, every tensor is fresh managed memory.
  --opt host          the optimizer step runs on the CPU through the managed pages (numpy views of
                      the parameters and gradients), as a CPU-offloaded optimizer would: every
                      iteration the host touches all weights, the next forward faults them back.
                      Needs --alloc managed.
  --emit-nvtx         the loop runs under torch.autograd.profiler.emit_nvtx(): one NVTX range per
                      PyTorch op and autograd node, no iteration ranges.
  --profiler-steps    the loop runs inside torch.profiler.profile with a schedule whose recording
                      window lies past the end of the run (wait=100), as training frameworks that
                      always wrap the loop in a profiler schedule do; prof.step() ends each
                      iteration, so every iteration is a record_function "ProfilerStep#N". Kineto
                      never starts (no second CUPTI subscriber beside nsys); under --emit-nvtx those
                      ranges are NVTX ranges.
  --nvtx-steps        user NVTX ranges "train_step N" around each iteration (torch.cuda.nvtx).
  --ddp               torchrun worker: gloo process group, DistributedDataParallel on cuda:0 for
                      every rank (one GPU is enough), the ranks listed in --managed-ranks use
                      --alloc managed --opt host, the others PyTorch's allocator and the GPU
                      optimizer.
"""
import argparse
import ctypes
import os
import sys
import time

import numpy as np
import torch

p = argparse.ArgumentParser()
p.add_argument("--alloc", choices=["caching", "managed"], default="caching")
p.add_argument("--opt", choices=["device", "host"], default="device")
p.add_argument("--emit-nvtx", action="store_true")
p.add_argument("--profiler-steps", action="store_true")
p.add_argument("--nvtx-steps", action="store_true")
p.add_argument("--ddp", action="store_true")
p.add_argument("--managed-ranks", default="1")
p.add_argument("--iters", type=int, default=10)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--embd", type=int, default=64, help="embedding width (64: a toy; 512 and 4 layers: 12.6M weights, 50 MB the host step touches)")
args = p.parse_args()

rank, world = 0, 1
if args.ddp:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    managed = str(rank) in args.managed_ranks.split(",")
    args.alloc, args.opt = ("managed", "host") if managed else ("caching", "device")
if args.opt == "host" and args.alloc != "managed":
    sys.exit("--opt host needs --alloc managed (the host reads and writes the weights in place)")

# The allocator must be swapped before any CUDA memory is allocated.
if args.alloc == "managed":
    so = os.environ.get("UM_ALLOC_SO", "/tmp/um_alloc.so")
    alloc = torch.cuda.memory.CUDAPluggableAllocator(so, "um_malloc", "um_free")
    torch.cuda.memory.change_current_allocator(alloc)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

torch.cuda.set_device(0)
if args.ddp:
    import torch.distributed as dist
    dist.init_process_group("gloo")
print(f"rank {rank} of {world} pid {os.getpid()} alloc={args.alloc} opt={args.opt} "
      f"torch {torch.__version__} transformers {__import__('transformers').__version__}", flush=True)

V, T, B, LR = 512, 64, 4, 1e-3
torch.manual_seed(0)
cfg = GPT2Config(vocab_size=V, n_positions=T, n_embd=args.embd, n_layer=args.layers, n_head=2)
model = GPT2LMHeadModel(cfg).cuda().train()
net = model
if args.ddp:
    try:
        net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    except Exception as e:  # keep the recording going with an explicit all-reduce
        print(f"rank {rank}: DistributedDataParallel failed ({e!r}); all-reducing gradients by hand", flush=True)
        net = None
params = [q for q in model.parameters() if q.requires_grad]
opt = torch.optim.SGD(params, lr=LR) if args.opt == "device" else None

g = torch.Generator().manual_seed(1 + rank)
batches = [torch.randint(0, V, (B, T), generator=g).pin_memory() for _ in range(args.iters)]


def host_view(t):
    assert t.dtype == torch.float32 and t.is_contiguous()
    return np.ctypeslib.as_array((ctypes.c_float * t.numel()).from_address(t.data_ptr()))


def host_sgd():
    # CPU-side optimizer through the managed pages: read the gradient, write the weight in place.
    torch.cuda.synchronize()
    with torch.no_grad():
        for q in params:
            if q.grad is not None:
                w = host_view(q.detach())
                w -= np.float32(LR) * host_view(q.grad)


def iteration(i):
    ids = batches[i].to("cuda", non_blocking=True)
    fwd = net if net is not None else model
    loss = fwd(input_ids=ids, labels=ids).loss
    loss.backward()
    if net is None:
        for q in params:
            dist.all_reduce(q.grad)
            q.grad /= world
    if opt is not None:
        opt.step()
    else:
        host_sgd()
    model.zero_grad(set_to_none=True)
    return loss.item()


class Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def step(self):
        pass


times = []
outer = torch.autograd.profiler.emit_nvtx() if args.emit_nvtx else Nothing()
if args.profiler_steps:
    sched = torch.profiler.schedule(wait=100, warmup=1, active=1)
    prof_ctx = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched)
else:
    prof_ctx = Nothing()
with outer, prof_ctx as prof:
    for i in range(args.iters):
        t0 = time.perf_counter()
        if args.nvtx_steps:
            torch.cuda.nvtx.range_push(f"train_step {i}")
        loss = iteration(i)
        if args.nvtx_steps:
            torch.cuda.nvtx.range_pop()
        prof.step()
        times.append((time.perf_counter() - t0) * 1e3)
        print(f"rank {rank} iter {i} loss {loss:.4f} {times[-1]:.1f} ms", flush=True)
torch.cuda.synchronize()
steady = sorted(times[1:]) or times
print(f"rank {rank} done: first iteration {times[0]:.1f} ms, median of the rest "
      f"{steady[len(steady) // 2]:.1f} ms", flush=True)
if args.ddp:
    dist.barrier()
    dist.destroy_process_group()
