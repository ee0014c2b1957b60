"""The tiny GPT-2 of hf_train.py trained by PyTorch Lightning's Trainer (one GPU, PyTorch's own
allocator), with the NVTX callback users add for nsys: each training batch is a user range
"train_step N" (torch.cuda.nvtx.range_push in on_train_batch_start, range_pop in
on_train_batch_end, after the optimizer step and a loss.item() for logging). No emit_nvtx: the
trace's NVTX holds only these ranges.

    python3 lightning_train.py [--iters 10]
"""
import argparse
import os
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
try:
    import lightning.pytorch as pl
except ImportError:  # the standalone package
    import pytorch_lightning as pl
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, default=10)
args = p.parse_args()

V, T, B, LR = 512, 64, 4, 1e-3


class TinyGPT(pl.LightningModule):
    def __init__(self):
        super().__init__()
        cfg = GPT2Config(vocab_size=V, n_positions=T, n_embd=64, n_layer=2, n_head=2)
        self.model = GPT2LMHeadModel(cfg)

    def training_step(self, batch, batch_idx):
        ids = batch[0]
        return self.model(input_ids=ids, labels=ids).loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=LR)


class NvtxSteps(pl.Callback):
    def __init__(self):
        self.t0, self.times = 0.0, []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.t0 = time.perf_counter()
        torch.cuda.nvtx.range_push(f"train_step {batch_idx}")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        loss = float(loss) if loss is not None else float("nan")  # .item(): a host sync, as logging does
        torch.cuda.nvtx.range_pop()
        self.times.append((time.perf_counter() - self.t0) * 1e3)
        print(f"iter {batch_idx} loss {loss:.4f} {self.times[-1]:.1f} ms", flush=True)


torch.manual_seed(0)
g = torch.Generator().manual_seed(1)
data = TensorDataset(torch.randint(0, V, (args.iters * B, T), generator=g))
cb = NvtxSteps()
trainer = pl.Trainer(accelerator="gpu", devices=1, max_steps=args.iters, max_epochs=1, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                     num_sanity_val_steps=0, default_root_dir="/tmp/pl", callbacks=[cb])
print(f"pid {os.getpid()} torch {torch.__version__} lightning {pl.__version__}", flush=True)
trainer.fit(TinyGPT(), DataLoader(data, batch_size=B, shuffle=False, num_workers=0))
torch.cuda.synchronize()
rest = sorted(cb.times[1:]) or cb.times
print(f"done: {len(cb.times)} iterations, first {cb.times[0]:.1f} ms, median of the rest "
      f"{rest[len(rest) // 2]:.1f} ms", flush=True)
