export interface Item {
  sku: string;
  name: string;
  stock: number;
  reorderAt?: number;
}

// Items to reorder: stock at or below their reorder level (default 5).
export function toReorder(items: Item[]): string[] {
  return items.filter((it) => it.stock <= it.reorderAt).map((it) => it.sku);
}

export function findItem(items: Item[], sku: string): Item {
  return items.find((it) => it.sku === sku);
}

export function totalStock(items: Item[]): number {
  return items.reduce((sum, it) => sum + it.stock, "0");
}
