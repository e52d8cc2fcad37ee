"""A word-level LSTM language model with the decoder tied to the embedding, trained by truncated
backpropagation through time: the corpus is cut into batch_size streams, each step sees bptt
tokens of every stream, and the hidden state carries over between steps detached from the graph.

Written as a PyTorch program: only the import block below names ember. ``--data`` is a text file
(words separated by spaces, one sentence a line); without it the program makes up a corpus.
"""

import argparse
import math
import random

import ember as torch
import ember.nn as nn
import ember.optim as optim


class Dictionary:
    def __init__(self):
        self.word2idx, self.idx2word = {}, []

    def add_word(self, word):
        if word not in self.word2idx:
            self.word2idx[word] = len(self.idx2word)
            self.idx2word.append(word)
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


def tokenize(lines, dictionary):
    ids = [dictionary.add_word(w) for line in lines for w in line.split() + ["<eos>"]]
    return torch.tensor(ids, dtype=torch.long)


def batchify(data, bsz):
    """(tokens,) -> (tokens // bsz, bsz): each column a contiguous stream."""
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=True):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("tied weights need --nhid equal to --emsize")
            self.decoder.weight = self.encoder.weight
        self.nhid, self.nlayers = nhid, nlayers
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output))
        return nn.functional.log_softmax(decoded, dim=-1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    """The hidden state's values without their history: backprop stops at the step's start."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def train_epoch(args, model, data, criterion, optimizer, ntokens, epoch):
    model.train()
    hidden = model.init_hidden(args.batch_size)
    total = 0.0
    for batch, i in enumerate(range(0, data.size(0) - 1, args.bptt)):
        inputs, targets = get_batch(data, i, args.bptt)
        hidden = repackage_hidden(hidden)
        optimizer.zero_grad()
        output, hidden = model(inputs, hidden)
        loss = criterion(output.view(-1, ntokens), targets)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        total += loss.item()
        if (batch + 1) % args.log_interval == 0:
            cur = total / args.log_interval
            print(f"| epoch {epoch} | batch {batch + 1} | loss {cur:5.2f} "
                  f"| ppl {math.exp(cur):8.2f}")
            total = 0.0


def evaluate(args, model, data, criterion, ntokens):
    model.eval()
    hidden = model.init_hidden(data.size(1))
    total = 0.0
    with torch.no_grad():
        for i in range(0, data.size(0) - 1, args.bptt):
            inputs, targets = get_batch(data, i, args.bptt)
            output, hidden = model(inputs, hidden)
            total += len(inputs) * criterion(output.view(-1, ntokens), targets).item()
    return total / (len(data) - 1)


def made_up_corpus(lines, seed):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(40)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) for _ in range(lines)]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="LSTM language model")
    parser.add_argument("--data", default=None)
    parser.add_argument("--emsize", type=int, default=64)
    parser.add_argument("--nhid", type=int, default=64)
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--eval-batch-size", type=int, default=4)
    parser.add_argument("--bptt", type=int, default=16)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=1111)
    parser.add_argument("--log-interval", type=int, default=20)
    parser.add_argument("--save", default=None, help="where to save the best model")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    lines = open(args.data).read().splitlines() if args.data else made_up_corpus(300, args.seed)
    dictionary = Dictionary()
    n_val = max(2, len(lines) // 10)
    train_data = batchify(tokenize(lines[n_val:], dictionary), args.batch_size)
    val_data = batchify(tokenize(lines[:n_val], dictionary), args.eval_batch_size)
    ntokens = len(dictionary)

    model = RNNModel(ntokens, args.emsize, args.nhid, args.nlayers, args.dropout)
    criterion = nn.NLLLoss()
    optimizer = optim.SGD(model.parameters(), lr=args.lr)
    # the learning rate drops by 4 whenever the validation loss stops improving
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.25, patience=0)
    best_val = None
    for epoch in range(1, args.epochs + 1):
        train_epoch(args, model, train_data, criterion, optimizer, ntokens, epoch)
        val_loss = evaluate(args, model, val_data, criterion, ntokens)
        print(f"| end of epoch {epoch} | valid loss {val_loss:5.2f} "
              f"| valid ppl {math.exp(val_loss):8.2f}")
        scheduler.step(val_loss)
        if args.save and (best_val is None or val_loss < best_val):
            best_val = val_loss
            torch.save(model.state_dict(), args.save)
    if args.save:
        model.load_state_dict(torch.load(args.save))
        best = evaluate(args, model, val_data, criterion, ntokens)
        print(f"| best model | valid loss {best:5.2f}")
    return model


if __name__ == "__main__":
    main()
