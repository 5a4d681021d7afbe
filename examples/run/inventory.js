// The seed program of OpenAI's PTC guide: two lookups in parallel, one batch, one result.
const [stock, demand] = await Promise.all([
  tools.get_inventory({ sku: 'sku_123' }),
  tools.get_demand_forecast({ sku: 'sku_123', days: 30 }),
]);
text({ sku: 'sku_123', reorder: demand.units > stock.available_units, shortfall: Math.max(0, demand.units - stock.available_units) });
