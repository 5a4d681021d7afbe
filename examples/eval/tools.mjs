// The client side of the eval's tasks (tasks.yaml): each tool's declaration and the code that
// answers its calls, as an application would run them, and the checks of the final answers.
// Run with:  npx ptc-emulator eval tasks.yaml

const sku = { type: "object", properties: { sku: { type: "string" } }, required: ["sku"], additionalProperties: false };

/** The fifty SKUs of the second task, sku_001 to sku_050, with stock and demand that vary. */
export const SKUS = Array.from({ length: 50 }, (_, index) => `sku_${String(index + 1).padStart(3, "0")}`);

function stockOf(name) {
  const n = Number(name.slice(4));
  // The seed's own SKU keeps the guide's figures.
  if (name === "sku_123") return { available: 12, requested: 30 };
  return { available: (n * 37) % 100, requested: (n * 53) % 90 + 5 };
}

/** The orders of the third task: 8 pages of 25, some paid, some refunded or pending. */
const PAGE_SIZE = 25;
const PAGES = 8;
function order(index) {
  const statuses = ["paid", "paid", "paid", "refunded", "pending"];
  return {
    id: `ord_${String(index + 1).padStart(4, "0")}`,
    customer: `customer_${(index * 7) % 61}`,
    amount_cents: 500 + ((index * 7919) % 20000),
    currency: "usd",
    status: statuses[index % statuses.length],
    created_at: new Date(Date.UTC(2026, 10, 1) + index * 3_600_000).toISOString(),
  };
}

export const tools = {
  get_inventory: {
    description: "Return an object with sku (string) and available_units (number), and where the stock is.",
    parameters: sku,
    strict: true,
    outputSchema: { type: "object", properties: { sku: { type: "string" }, available_units: { type: "number" } }, required: ["sku", "available_units"] },
    run: ({ sku: name }) => ({ sku: name, available_units: stockOf(name).available, warehouse: "ams-2", bin: `B-${name.slice(4)}`, last_counted_at: "2026-11-30T06:00:00Z" }),
  },
  get_demand: {
    description: "Return an object with sku (string) and requested_units (number) over the next 30 days.",
    parameters: sku,
    strict: true,
    outputSchema: { type: "object", properties: { sku: { type: "string" }, requested_units: { type: "number" } }, required: ["sku", "requested_units"] },
    run: ({ sku: name }) => ({ sku: name, requested_units: stockOf(name).requested, window_days: 30, forecast_model: "seasonal-v3" }),
  },
  list_orders: {
    description: "List orders, 25 per page, oldest first. Returns { page, orders: [{ id, customer, amount_cents, currency, status, created_at }], next_page } with next_page null on the last page.",
    parameters: { type: "object", properties: { page: { type: "integer" } }, required: ["page"], additionalProperties: false },
    strict: true,
    run: ({ page }) => {
      if (!Number.isInteger(page) || page < 1 || page > PAGES) throw new Error(`no page ${page}: pages are 1 to ${PAGES}`);
      const orders = Array.from({ length: PAGE_SIZE }, (_, index) => order((page - 1) * PAGE_SIZE + index));
      return { page, orders, next_page: page < PAGES ? page + 1 : null };
    },
  },
};

/** The right answers, computed from the same data the tools serve. */
export function shortages() {
  return SKUS.map((name) => ({ sku: name, short: Math.max(stockOf(name).requested - stockOf(name).available, 0) })).filter((entry) => entry.short > 0);
}
export function paidTotalCents() {
  let total = 0;
  for (let index = 0; index < PAGE_SIZE * PAGES; index++) if (order(index).status === "paid") total += order(index).amount_cents;
  return total;
}

export const checks = {
  /** Every short SKU is named, and the total shortage is given. */
  fiftySkus: (answer) => {
    const expected = shortages();
    const total = expected.reduce((sum, entry) => sum + entry.short, 0);
    const missing = expected.filter((entry) => !answer.includes(entry.sku));
    if (missing.length > 0) return `the answer leaves out ${missing.map((entry) => entry.sku).join(", ")}`;
    if (!answer.includes(`${total} units`)) return `the answer does not give the total shortage, ${total} units`;
    return true;
  },
  /** The paid total, in dollars with cents. */
  paidRevenue: (answer) => {
    const dollars = (paidTotalCents() / 100).toFixed(2);
    return answer.includes(`$${dollars}`) || `the answer does not give the paid total, $${dollars}`;
  },
};
