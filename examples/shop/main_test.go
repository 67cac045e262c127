package shop_test

import (
	"testing"

	"github.com/pgsaga/pgsaga/examples/shop"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

func TestMain(m *testing.M) {
	sagatest.Main(m, &sagatest.DBOpts{Migrations: shop.Migrations()})
}
