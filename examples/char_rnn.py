"""A character-level LSTM language model, trained with truncated backpropagation through time.

It reads examples/data/tiny_corpus.txt (the public-domain opening of *Alice's Adventures in
Wonderland*), holds out its last 10% for validation, trains an Embedding -> LSTM -> Linear model
with CrossEntropyLoss, Adam and gradient-norm clipping, prints the training and validation
perplexity after each epoch, and finally samples some text from the model.

    python3 examples/char_rnn.py            # 30 epochs, about a minute on a CPU
    python3 examples/char_rnn.py --quick    # 2 small epochs, for tests
"""

import argparse
import math
import time
from pathlib import Path

import ember
from ember import nn, optim

CORPUS = Path(__file__).resolve().parent / "data" / "tiny_corpus.txt"


class CharRNN(nn.Module):
    def __init__(self, vocab, embed, hidden, layers, dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = nn.LSTM(embed, hidden, layers, batch_first=True,
                           dropout=dropout if layers > 1 else 0.0)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.rnn(self.embed(x), state)  # out: (batch, seq, hidden)
        return self.head(out), state


def batchify(ids, batch):
    """Cut a 1-d id tensor into `batch` parallel streams: (batch, length)."""
    n = ids.shape[0] // batch
    return ids[: n * batch].reshape(batch, n)


def run_epoch(model, data, bptt, criterion, opt=None, clip=1.0):
    """One pass over (batch, length) data in windows of bptt steps; returns the mean NLL/char."""
    training = opt is not None
    model.train(training)
    state, total, count = None, 0.0, 0
    with ember.set_grad_enabled(training):
        for i in range(0, data.shape[1] - 1, bptt):
            seq = min(bptt, data.shape[1] - 1 - i)
            x, y = data[:, i:i + seq], data[:, i + 1:i + 1 + seq]
            if state is not None:  # truncated BPTT: keep the state, cut its history
                state = tuple(s.detach() for s in state)
            logits, state = model(x, state)
            loss = criterion(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
            if training:
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), clip)
                opt.step()
            total += float(loss) * y.numel()
            count += y.numel()
    return total / count


def sample(model, stoi, itos, prompt, length, temperature=0.8):
    model.eval()
    with ember.no_grad():
        x = ember.tensor([[stoi[c] for c in prompt]])
        logits, state = model(x)
        out = list(prompt)
        for _ in range(length):
            probs = ember.softmax(logits[0, -1] / temperature, dim=-1)
            nxt = int(ember.multinomial(probs, 1))
            out.append(itos[nxt])
            logits, state = model(ember.tensor([[nxt]]), state)
    return "".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny model and 2 epochs")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    ember.manual_seed(args.seed)
    if args.quick:
        epochs, hidden, embed, layers, batch, bptt, gen = args.epochs or 2, 64, 16, 1, 16, 25, 80
    else:
        epochs, hidden, embed, layers, batch, bptt, gen = args.epochs or 30, 128, 32, 2, 16, 50, 300

    text = args.corpus.read_text(encoding="utf-8")
    itos = sorted(set(text))
    stoi = {c: i for i, c in enumerate(itos)}
    ids = ember.tensor([stoi[c] for c in text])
    split = int(0.9 * len(text))
    train, val = batchify(ids[:split], batch), batchify(ids[split:], 1)
    print(f"corpus: {len(text)} characters, vocabulary {len(itos)}; "
          f"train {tuple(train.shape)}, validation {tuple(val.shape)}")

    model = CharRNN(len(itos), embed, hidden, layers, dropout=0.1)
    criterion = nn.CrossEntropyLoss()
    opt = optim.Adam(model.parameters(), lr=5e-3)
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        train_nll = run_epoch(model, train, bptt, criterion, opt)
        val_nll = run_epoch(model, val, bptt, criterion)
        print(f"epoch {epoch:3d}  train perplexity {math.exp(train_nll):7.2f}  "
              f"validation perplexity {math.exp(val_nll):7.2f}  "
              f"({time.perf_counter() - start:.1f} s)")
    text_out = sample(model, stoi, itos, "Alice ", gen)
    print("sample:", text_out.replace("\n", " "))
    return math.exp(train_nll), math.exp(val_nll), text_out


if __name__ == "__main__":
    main()
