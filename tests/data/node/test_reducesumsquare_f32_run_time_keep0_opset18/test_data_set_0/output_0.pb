ByJ
|
AYî@/A