// Shopping cart state for the checkout page.
export class Cart {
  constructor(currency = 'EUR') {
    this.currency = currency;
    this.lines = [];
  }

  add(product, quantity = 1) {
    const line = this.lines.find((l) => l.product.id === product.id);
    if (line) {
      line.quantity += quantity;
    } else {
      this.lines.push({ product, quantity });
    }
  }

  remove(productId) {
    this.lines = this.lines.filter((l) => l.product.id !== productId);
  }

  subtotal() {
    return this.lines.reduce((sum, l) => sum + l.product.price * l.quantity, 0);
  }

  format(amount) {
    return new Intl.NumberFormat('de-DE', { style: 'currency', currency: this.currency }).format(amount);
  }

  summary() {
    const rows = this.lines.map((l) => `${l.quantity} x ${l.product.name}: ${this.format(l.product.price * l.quantity)}`);
    rows.push(`Subtotal: ${this.format(this.subtotal())}`);
    return rows.join('\n');
  }
}
