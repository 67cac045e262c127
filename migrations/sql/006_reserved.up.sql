-- Reserved: this version is taken by another change.
SELECT 1;
