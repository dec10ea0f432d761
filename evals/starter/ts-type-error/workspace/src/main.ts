import { toReorder, findItem, totalStock, type Item } from "./inventory.js";

const items: Item[] = [
  { sku: "A1", name: "bolt", stock: 3 },
  { sku: "B2", name: "nut", stock: 50, reorderAt: 60 },
  { sku: "C3", name: "washer", stock: 9 },
];
console.log(toReorder(items).join(","), findItem(items, "C3")?.name, totalStock(items));
