cReAtE sTrEaM Out aS sElEcT Sym, cOuNt(*) As N fRoM Trades WhErE pRiCe BeTwEeN 1 aNd 2 gRoUp By sym HaViNg n > 1 eMiT oN wInDoW cLoSe
