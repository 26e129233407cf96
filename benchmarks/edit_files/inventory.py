"""Inventory of a small shop: items, stock levels and reorder rules."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Item:
    sku: str
    name: str
    price: float
    stock: int = 0
    tags: list[str] = field(default_factory=list)

    def value(self) -> float:
        return self.price * self.stock


class Inventory:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: dict[str, Item] = {}

    def load(self) -> None:
        data = json.loads(self.path.read_text(encoding="utf-8"))
        for row in data["items"]:
            item = Item(row["sku"], row["name"], float(row["price"]), int(row.get("stock", 0)))
            item.tags = list(row.get("tags", []))
            self.items[item.sku] = item

    def save(self) -> None:
        rows = [{"sku": i.sku, "name": i.name, "price": i.price, "stock": i.stock, "tags": i.tags}
                for i in self.items.values()]
        self.path.write_text(json.dumps({"items": rows}, indent=2), encoding="utf-8")

    def restock(self, sku: str, amount: int) -> int:
        if amount <= 0:
            raise ValueError("amount must be positive")
        item = self.items[sku]
        item.stock += amount
        return item.stock

    def sell(self, sku: str, amount: int = 1) -> float:
        item = self.items[sku]
        if item.stock < amount:
            raise ValueError(f"only {item.stock} of {item.name!r} left")
        item.stock -= amount
        return item.price * amount

    def low_stock(self, threshold: int = 5) -> list[Item]:
        return sorted((i for i in self.items.values() if i.stock < threshold), key=lambda i: i.stock)

    def total_value(self) -> float:
        return sum(i.value() for i in self.items.values())


def main() -> None:
    inv = Inventory(Path("inventory.json"))
    inv.load()
    for item in inv.low_stock():
        print(f"{item.sku}\t{item.name}\t{item.stock}")
    print(f"total value: {inv.total_value():.2f}")


if __name__ == "__main__":
    main()
