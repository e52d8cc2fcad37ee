"""A variational autoencoder of 28 x 28 images in [0, 1]: linear encoder and decoder, the
reparameterisation trick, binary cross-entropy plus the KL divergence.

Written as a PyTorch program: only the import block below names ember. ``--data`` reads a file
written by ``torch.save({"images": float (N, 1, 28, 28) in [0, 1]}, path)``.
"""

import argparse

import ember as torch
import ember.nn.functional as F
from ember import nn, optim
from ember.utils.data import DataLoader, TensorDataset


class VAE(nn.Module):
    def __init__(self, hidden=400, latent=20):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.fc21 = nn.Linear(hidden, latent)
        self.fc22 = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    """Reconstruction (summed BCE) plus KL(q(z|x) || N(0, I)), summed over the batch."""
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def train(args, model, loader, optimizer, epoch):
    model.train()
    train_loss = 0.0
    for batch_idx, (data,) in enumerate(loader):
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]"
                  f"\tLoss: {loss.item() / len(data):.6f}")
    print(f"====> Epoch: {epoch} Average loss: {train_loss / len(loader.dataset):.4f}")


def test(model, loader):
    model.eval()
    test_loss = 0.0
    with torch.no_grad():
        for (data,) in loader:
            recon, mu, logvar = model(data)
            test_loss += loss_function(recon, data, mu, logvar).item()
    test_loss /= len(loader.dataset)
    print(f"====> Test set loss: {test_loss:.4f}")
    return test_loss


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="VAE of 28 x 28 images")
    parser.add_argument("--data", default=None, help="torch.save'd dict with 'images'")
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=400)
    parser.add_argument("--latent", type=int, default=20)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--save-model", default=None)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    if args.data:
        images = torch.load(args.data)["images"]
    else:
        images = torch.rand(args.samples, 1, 28, 28)
    split = max(1, len(images) // 6)
    train_loader = DataLoader(TensorDataset(images[split:]), batch_size=args.batch_size,
                              shuffle=True)
    test_loader = DataLoader(TensorDataset(images[:split]), batch_size=args.batch_size)
    model = VAE(args.hidden, args.latent)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        train(args, model, train_loader, optimizer, epoch)
        test_loss = test(model, test_loader)
        with torch.no_grad():
            sample = model.decode(torch.randn(8, args.latent)).view(8, 1, 28, 28)
        assert sample.shape == (8, 1, 28, 28)
    if args.save_model:
        torch.save(model.state_dict(), args.save_model)
        restored = VAE(args.hidden, args.latent)
        restored.load_state_dict(torch.load(args.save_model))
        print(f"reloaded test loss: {test(restored, test_loader):.4f}")
    return test_loss


if __name__ == "__main__":
    main()
