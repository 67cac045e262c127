DROP TABLE shop_shipments;
DROP TABLE shop_orders;
DROP TABLE shop_stock_counts;
DROP TABLE shop_products;
