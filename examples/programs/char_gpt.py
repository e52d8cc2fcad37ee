"""A character-level GPT: token and position embeddings, pre-norm transformer blocks whose causal
self-attention is written out (masked_fill of a lower-triangular mask, softmax; or, with
``--sdpa``, F.scaled_dot_product_attention(is_causal=True)), a GELU MLP, the
output layer tied to the token embedding; AdamW with weight decay on matrices only, gradient
clipping and a warmup-then-cosine learning rate; ``--dtype bfloat16`` runs the forward passes under
autocast.

Written as a PyTorch program: only the import block below names ember. ``--data`` is a text file;
without it the program trains on a small built-in text.
"""

import argparse
import math
from contextlib import nullcontext

import ember as torch
import ember.nn as nn
from ember.nn import functional as F
from ember.optim.lr_scheduler import LambdaLR
from ember.utils.data import DataLoader, Dataset

TEXT = "the quick brown fox jumps over the lazy dog. " * 40


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout, sdpa=False):
        super().__init__()
        assert n_embd % n_head == 0
        self.n_head, self.dropout, self.sdpa = n_head, dropout, sdpa
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)
        # a buffer, not a parameter: saved with the model, never trained
        mask = torch.tril(torch.ones(block_size, block_size))
        self.register_buffer("mask", mask.view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.sdpa:  # the fused kernel, same result
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            att = self.attn_drop(F.softmax(att, dim=-1))
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.proj(y))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout, sdpa=False):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, dropout, sdpa)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer=2, n_head=2, n_embd=32, dropout=0.1,
                 sdpa=False):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            [Block(n_embd, n_head, block_size, dropout, sdpa) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # scaled init of the residual projections
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.block_size, f"sequence of {t} > block size {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def configure_optimizers(self, weight_decay, lr, betas):
        """Weight decay on the matrices (weights of Linear and Embedding), none on biases and
        LayerNorm; the tied weight appears once."""
        params = {name: p for name, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in params.values() if p.dim() >= 2]
        no_decay = [p for p in params.values() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=betas)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx[:, -self.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("inf")
            probs = F.softmax(logits, dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
        return idx


class CharDataset(Dataset):
    """Every window of block_size + 1 characters: input and the input shifted by one."""

    def __init__(self, text, block_size):
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.data = torch.tensor([self.stoi[c] for c in text], dtype=torch.long)
        self.block_size = block_size

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, i):
        chunk = self.data[i:i + self.block_size + 1]
        return chunk[:-1], chunk[1:]

    def decode(self, indices):
        return "".join(self.chars[i] for i in indices)


def lr_lambda(warmup, max_steps, min_ratio=0.1):
    """Linear warmup, then cosine decay to min_ratio of the base learning rate."""
    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, max_steps - warmup))
        return min_ratio + (1 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return factor


@torch.no_grad()
def estimate_loss(model, loader, batches):
    model.eval()
    losses = []
    for i, (x, y) in enumerate(loader):
        if i == batches:
            break
        losses.append(model(x, y)[1].item())
    model.train()
    return sum(losses) / len(losses)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="character-level GPT")
    parser.add_argument("--data", default=None, help="a text file")
    parser.add_argument("--block-size", type=int, default=32)
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--n-head", type=int, default=2)
    parser.add_argument("--n-embd", type=int, default=32)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--sdpa", action="store_true", help="fused attention")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                        help="bfloat16: forward passes under autocast")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--grad-clip", type=float, default=1.0)
    parser.add_argument("--eval-interval", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--checkpoint", default=None, help="where to save (and resume from)")
    parser.add_argument("--sample", type=int, default=40, help="characters to generate")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    text = open(args.data).read() if args.data else TEXT
    dataset = CharDataset(text, args.block_size)
    n_val = max(1, len(dataset) // 10)
    train_set = torch.utils.data.Subset(dataset, range(len(dataset) - n_val))
    val_set = torch.utils.data.Subset(dataset, range(len(dataset) - n_val, len(dataset)))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              drop_last=True)
    val_loader = DataLoader(val_set, batch_size=args.batch_size)

    model = GPT(len(dataset.chars), args.block_size, args.n_layer, args.n_head, args.n_embd,
                args.dropout, args.sdpa)
    print(f"{sum(p.numel() for p in model.parameters())} parameters")
    optimizer = model.configure_optimizers(args.weight_decay, args.lr, (0.9, 0.95))
    scheduler = LambdaLR(optimizer, lr_lambda(args.warmup, args.max_steps))
    ctx = (nullcontext() if args.dtype == "float32"
           else torch.autocast(device_type="cpu", dtype=torch.bfloat16))
    step = 0
    while step < args.max_steps:
        for x, y in train_loader:
            with ctx:
                _, loss = model(x, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
            optimizer.step()
            scheduler.step()
            step += 1
            if step % args.eval_interval == 0 or step == args.max_steps:
                print(f"step {step}: train loss {loss.item():.4f}, grad norm {norm.item():.3f}"
                      f", lr {scheduler.get_last_lr()[0]:.2e}"
                      f", val loss {estimate_loss(model, val_loader, 4):.4f}")
            if step == args.max_steps:
                break
    if args.checkpoint:
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "step": step, "args": vars(args)}, args.checkpoint)
        state = torch.load(args.checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    start = torch.zeros((1, 1), dtype=torch.long)
    out = model.generate(start, args.sample, top_k=5)[0].tolist()
    print("sample:", repr(dataset.decode(out)))
    return model


if __name__ == "__main__":
    main()
