"""A ResNet-18-style image classifier (BasicBlock, BatchNorm, 1 x 1 downsample shortcuts) for
32 x 32 colour images (CIFAR-10's shape), trained by SGD with Nesterov momentum, weight decay and
a multi-step learning rate.

Written as a PyTorch program: only the import block below names ember. ``--data`` reads a file
written by ``torch.save({"images": uint8 (N, 32, 32, 3), "labels": int64 (N,)}, path)``.
"""

import argparse

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
from ember.utils.data import DataLoader, Dataset


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or in_planes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=10, width=64):
        super().__init__()
        self.in_planes = width
        # CIFAR's stem: a 3 x 3 convolution, no max-pool
        self.conv1 = nn.Conv2d(3, width, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.layer1 = self._make_layer(block, width, layers[0], stride=1)
        self.layer2 = self._make_layer(block, 2 * width, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 4 * width, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 8 * width, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * width * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        for m in self.modules():  # each residual branch starts as the identity
            if isinstance(m, BasicBlock):
                nn.init.zeros_(m.bn2.weight)

    def _make_layer(self, block, planes, blocks, stride):
        layers = []
        for s in [stride] + [1] * (blocks - 1):
            layers.append(block(self.in_planes, planes, s))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(num_classes=10, width=64):
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes, width)


class Images(Dataset):
    """HWC uint8 images -> normalised CHW floats; training adds random flips and crops."""

    MEAN = (0.4914, 0.4822, 0.4465)
    STD = (0.2470, 0.2435, 0.2616)

    def __init__(self, images, labels, augment):
        self.images, self.labels, self.augment = images, labels, augment
        self.mean = torch.tensor(self.MEAN).view(3, 1, 1)
        self.std = torch.tensor(self.STD).view(3, 1, 1)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.images[i].permute(2, 0, 1).float() / 255.0
        if self.augment:
            if torch.rand(1).item() < 0.5:
                x = torch.flip(x, dims=[2])
            padded = F.pad(x, (4, 4, 4, 4))
            top, left = torch.randint(0, 9, (2,)).tolist()
            x = padded[:, top:top + x.shape[1], left:left + x.shape[2]]
        return (x - self.mean) / self.std, self.labels[i]


def train(args, model, loader, criterion, optimizer, epoch):
    model.train()
    for batch_idx, (inputs, targets) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx}/{len(loader)}]\tLoss: {loss.item():.4f}")


def evaluate(model, loader, criterion):
    model.eval()
    total, correct, loss = 0, 0, 0.0
    with torch.no_grad():
        for inputs, targets in loader:
            outputs = model(inputs)
            loss += criterion(outputs, targets).item() * len(targets)
            correct += (outputs.argmax(1) == targets).sum().item()
            total += len(targets)
    print(f"Test: loss {loss / total:.4f}, accuracy {correct}/{total}")
    return correct / total


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="ResNet-18 on 32 x 32 images")
    parser.add_argument("--data", default=None)
    parser.add_argument("--samples", type=int, default=128)
    parser.add_argument("--width", type=int, default=64, help="channels of the first stage")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--milestones", type=int, nargs="*", default=[1])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--resume", action="store_true")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    if args.data:
        data = torch.load(args.data)
    else:
        data = {"images": torch.randint(0, 256, (args.samples, 32, 32, 3), dtype=torch.uint8),
                "labels": torch.randint(0, 10, (args.samples,))}
    n_test = max(1, len(data["labels"]) // 4)
    train_set = Images(data["images"][n_test:], data["labels"][n_test:], augment=True)
    test_set = Images(data["images"][:n_test], data["labels"][:n_test], augment=False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              drop_last=True)
    test_loader = DataLoader(test_set, batch_size=args.batch_size)

    model = resnet18(width=args.width)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                          weight_decay=args.weight_decay, nesterov=True)
    scheduler = optim.lr_scheduler.MultiStepLR(optimizer, args.milestones, gamma=0.1)
    start_epoch, best = 0, 0.0
    if args.resume:
        checkpoint = torch.load(args.checkpoint)
        model.load_state_dict(checkpoint["net"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        start_epoch, best = checkpoint["epoch"] + 1, checkpoint["acc"]
        print(f"resumed at epoch {start_epoch}, best accuracy {best:.3f}")
    for epoch in range(start_epoch, start_epoch + args.epochs):
        train(args, model, train_loader, criterion, optimizer, epoch)
        acc = evaluate(model, test_loader, criterion)
        scheduler.step()
        if acc >= best and args.checkpoint:
            best = acc
            torch.save({"net": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "epoch": epoch, "acc": acc},
                       args.checkpoint)
    return best


if __name__ == "__main__":
    main()
