"""A convolutional digit classifier trained on 28 x 28 grey images (MNIST's shape).

Written as a PyTorch program: only the import block below names ember. ``--data`` reads a file
written by ``torch.save({"images": uint8 (N, 28, 28), "labels": int64 (N,)}, path)``; without it
the program draws a small random set of that shape.
"""

import argparse

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
from ember.optim.lr_scheduler import StepLR
from ember.utils.data import DataLoader, Dataset


class Net(nn.Module):
    def __init__(self, dropout1=0.25, dropout2=0.5):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(dropout1)
        self.dropout2 = nn.Dropout(dropout2)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


class Digits(Dataset):
    """uint8 images scaled to [0, 1] and normalised with MNIST's mean and deviation."""

    MEAN, STD = 0.1307, 0.3081

    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        image = self.images[index].float().div(255.0).unsqueeze(0)
        return (image - self.MEAN) / self.STD, self.labels[index]


def random_digits(count, generator):
    images = torch.randint(0, 256, (count, 28, 28), generator=generator, dtype=torch.uint8)
    return {"images": images, "labels": torch.randint(0, 10, (count,), generator=generator)}


def train(args, model, device, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]"
                  f"\tLoss: {loss.item():.6f}")
            if args.dry_run:
                break


def test(model, device, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(loader.dataset)
    print(f"Test set: Average loss: {test_loss:.4f}, "
          f"Accuracy: {correct}/{len(loader.dataset)}")
    return test_loss


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="digit classifier (MNIST's shapes)")
    parser.add_argument("--data", default=None, help="torch.save'd dict of images and labels")
    parser.add_argument("--samples", type=int, default=256, help="size of the random set")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--test-batch-size", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7, help="StepLR's factor")
    parser.add_argument("--dropout", type=float, default=None, help="both dropouts' p")
    parser.add_argument("--dry-run", action="store_true", help="one batch per epoch")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--save-model", default=None, help="checkpoint path")
    parser.add_argument("--resume", default=None, help="checkpoint to start from")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    device = torch.device("cpu")
    if args.data:
        data = torch.load(args.data)
    else:
        data = random_digits(args.samples, torch.Generator().manual_seed(args.seed))
    dataset = Digits(data["images"], data["labels"])
    test_size = max(1, len(dataset) // 6)
    train_set, test_set = torch.utils.data.random_split(
        dataset, [len(dataset) - test_size, test_size],
        generator=torch.Generator().manual_seed(args.seed))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers)
    test_loader = DataLoader(test_set, batch_size=args.test_batch_size)

    dropouts = () if args.dropout is None else (args.dropout, args.dropout)
    model = Net(*dropouts).to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    start = 1
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        start = checkpoint["epoch"] + 1
    for epoch in range(start, start + args.epochs):
        train(args, model, device, train_loader, optimizer, epoch)
        test_loss = test(model, device, test_loader)
        scheduler.step()
    if args.save_model:
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "epoch": epoch}, args.save_model)
    return test_loss


if __name__ == "__main__":
    main()
