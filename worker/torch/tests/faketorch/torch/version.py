cuda = "13.0-fake"
